/**
 * One forked supervisor process as the primary sees it: its slot, what it told
 * over IPC (supervisor id, readiness to claim, jobs finished, memory, its last
 * metrics), and requests that answer within a deadline or not at all.
 *
 * States: forked → identified (supervisor id known) → ready (claiming) →
 * draining (asked) → exited; any state may end as killed-hung (SIGKILLed by the
 * primary for its silence) → exited. `exited` resolves once, with the exit code or signal.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { isChildMessage, type ChildMessage, type MetricsJson, type PrimaryMessage } from './messages.ts';

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ForkOptions {
  /** The script and arguments (the jobvisor bin and `start`). */
  script: string;
  args: string[];
  env: NodeJS.ProcessEnv;
}

export class SupervisorChild {
  readonly process: ChildProcess;
  readonly pid: number;
  readonly startedAt = performance.now();
  readonly exited: Promise<ChildExit>;
  supervisorId: string | undefined;
  ready = false;
  drainAsked = false;
  /** Set when the primary killed it as hung: how long it had been silent (ms). */
  killedHung: number | undefined;
  jobs = 0;
  rssBytes = 0;
  /** Its metrics as last read (a scrape, or its final report after a drain). */
  lastMetrics: MetricsJson = [];
  exit: ChildExit | undefined;
  private seq = 0;
  private readonly waiting = new Map<number, (m: ChildMessage) => void>();
  private readonly onReady: Array<() => void> = [];

  constructor(
    readonly slot: number,
    options: ForkOptions,
    onMessage: (child: SupervisorChild, m: ChildMessage) => void,
  ) {
    this.process = fork(options.script, options.args, {
      env: options.env,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.pid = this.process.pid ?? -1;
    this.process.on('message', (m: unknown) => {
      if (!isChildMessage(m)) return;
      this.take(m);
      onMessage(this, m);
    });
    this.exited = new Promise((resolve) =>
      this.process.once('exit', (code, signal) => {
        this.exit = { code, signal };
        for (const resolveWait of this.waiting.values()) resolveWait({ jobvisor: 'ready' });
        this.waiting.clear();
        resolve(this.exit);
      }),
    );
    // A send to a process that just died fails with EPIPE; its exit is handled elsewhere.
    this.process.on('error', () => {});
  }

  get alive(): boolean {
    return this.exit === undefined;
  }

  private take(m: ChildMessage): void {
    switch (m.jobvisor) {
      case 'supervisor':
        this.supervisorId = m.id;
        break;
      case 'ready':
        this.ready = true;
        for (const f of this.onReady.splice(0)) f();
        break;
      case 'stats':
        this.jobs = m.jobs;
        this.rssBytes = m.rssBytes;
        break;
      case 'metrics':
        this.lastMetrics = m.metrics;
        this.waiting.get(m.seq)?.(m);
        this.waiting.delete(m.seq);
        break;
      case 'readiness':
        this.waiting.get(m.seq)?.(m);
        this.waiting.delete(m.seq);
        break;
    }
  }

  /** Resolves true once the child claims, false if it exits first. */
  whenReady(): Promise<boolean> {
    if (this.ready) return Promise.resolve(true);
    if (!this.alive) return Promise.resolve(false);
    return Promise.race([
      new Promise<boolean>((resolve) => this.onReady.push(() => resolve(true))),
      this.exited.then(() => false),
    ]);
  }

  /** Asks and waits at most `ms`; undefined when the child does not answer (dead, busy, starting). */
  request(kind: 'metrics' | 'readiness', ms: number): Promise<ChildMessage | undefined> {
    if (!this.alive || !this.process.connected) return Promise.resolve(undefined);
    const seq = ++this.seq;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(seq);
        resolve(undefined);
      }, ms);
      this.waiting.set(seq, (m) => {
        clearTimeout(timer);
        resolve(m.jobvisor === kind ? m : undefined);
      });
      this.send({ jobvisor: kind, seq });
    });
  }

  /** Asks the child to drain and exit (idempotent). */
  drain(): void {
    if (this.drainAsked) return;
    this.drainAsked = true;
    this.send({ jobvisor: 'drain' });
  }

  signal(signal: NodeJS.Signals): void {
    if (this.alive) this.process.kill(signal);
  }

  private send(m: PrimaryMessage): void {
    if (this.alive && this.process.connected) this.process.send(m, (err) => void err);
  }
}
