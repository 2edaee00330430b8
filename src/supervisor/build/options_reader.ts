/**
 * Reads task options in a thread of its own (worker/options_thread.ts), so that
 * importing a task's module never blocks the supervisor's main thread.
 *
 * The thread starts at warm() (the supervisor's start) or with the first read,
 * and ends after IDLE_MS without one
 * (options are read once per kind: a handful of reads at start, then rarely);
 * the next read starts a new one. It never keeps the process alive. If it dies
 * (a module that crashes its thread on import), the reads in flight answer
 * "no options" with the reason as a problem, and the next read starts afresh:
 * the jobs of such a kind still run, and fail, as they always did.
 */
import { Worker } from 'node:worker_threads';
import type { TaskCheck } from '../../worker/check_task.ts';
import { sourcesOf, type TaskPlaces } from '../../worker/loader.ts';
import type { OptionsRead } from '../../worker/task_options.ts';
import type { OptionsAnswer, OptionsRequest } from '../../worker/options_thread.ts';
import { threadModule } from '../threads.ts';

/** How long an idle options thread is kept. */
export const IDLE_MS = 10_000;

export class OptionsReader {
  private worker: Worker | undefined;
  private nextId = 0;
  private readonly waiting = new Map<number, (answer: OptionsAnswer) => void>();
  private idleTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly places: TaskPlaces) {}

  /** The kind's options (null: none declared, or unreadable, with the reason in problems). */
  async read(kind: string): Promise<OptionsRead> {
    const answer = await this.ask({ kind });
    if (answer.check !== undefined) return { options: null, problems: [] };
    return { options: answer.options, problems: answer.problems };
  }

  /** Loads the kind's task in the thread, as a worker would (the start-up check). */
  async check(kind: string): Promise<TaskCheck> {
    const answer = await this.ask({ kind, check: true });
    if (answer.check !== undefined) return answer.check;
    const problem = answer.problems[0];
    return problem === undefined
      ? { ok: true }
      : { ok: false, reason: 'import-failed', message: `task ${kind}: ${problem}` };
  }

  private ask(request: Omit<OptionsRequest, 'id'>): Promise<OptionsAnswer> {
    if (this.closed) return Promise.resolve({ id: -1, options: null, problems: [] });
    clearTimeout(this.idleTimer);
    const worker = (this.worker ??= this.start());
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      worker.postMessage({ id, ...request } satisfies OptionsRequest);
    });
  }

  /** Starts the thread now, so that the first read does not wait for it to boot. */
  warm(): void {
    if (this.closed || this.worker) return;
    this.worker = this.start();
    this.idleLater(this.worker);
  }

  /** Ends the thread (supervisor shutdown); later reads answer "no options". */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.idleTimer);
    const worker = this.worker;
    this.worker = undefined;
    // Stopping is nothing wrong with the task: answer "no options", report no problem.
    this.answerAll([]);
    await worker?.terminate();
  }

  private start(): Worker {
    const worker = new Worker(threadModule('options_thread.js', 'tsx_options_thread.mjs'), {
      workerData: { sources: sourcesOf(this.places) },
    });
    worker.unref();
    worker.on('message', (answer: OptionsAnswer) => {
      const resolve = this.waiting.get(answer.id);
      this.waiting.delete(answer.id);
      resolve?.(answer);
      if (this.waiting.size === 0) this.idleLater(worker);
    });
    worker.on('error', (err) => this.lost(worker, `the task options thread failed: ${err.message}`));
    worker.on('exit', (code) => this.lost(worker, `the task options thread exited with code ${code}`));
    return worker;
  }

  private idleLater(worker: Worker): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (this.worker !== worker || this.waiting.size > 0) return;
      this.worker = undefined;
      void worker.terminate();
    }, IDLE_MS);
    this.idleTimer.unref();
  }

  private lost(worker: Worker, why: string): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    this.answerAll([`${why}; options ignored`]);
  }

  /** Answers every read in flight with no options and these problems. */
  private answerAll(problems: string[]): void {
    for (const [id, resolve] of this.waiting) resolve({ id, options: null, problems });
    this.waiting.clear();
  }
}
