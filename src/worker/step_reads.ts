/**
 * The durable-steps reads of a thread's runs, gathered: each run's load of
 * its records (first ctx.step, sleep or waitFor) and each wait's decision go
 * into one statement with those of the other runs that ask in the same turn
 * of the event loop (queue/steps.ts loadStepsOf, queue/take_wait.ts
 * takeWaits).
 *
 * Why: a run needs its records before its first step (a resumed job's
 * usually come with it: supervisor/claim/claimed_steps.ts). Read one run at
 * a time through the thread's ctx.db pool (pool.dbPoolSize, 2 connections),
 * 10,000 sleepers waking together, or 10,000 waiters signalled in one commit,
 * queued on those connections: the last resumed 8–10 s after its wake time on
 * a quiet 2-core machine (BENCHMARKS.md, "Durable steps").
 *
 * States per gatherer: idle → gathering (a request arrived: the statement
 * leaves on the next turn, setImmediate) → in flight (one statement at a time;
 * requests arriving meanwhile gather for the next) → idle. A statement takes
 * at most MAX_BATCH requests. A deadlock or serialization failure (the rows
 * are this supervisor's, which its completer writes in batches too) is
 * retried up to CONFLICT_RETRIES times; any other error fails every request of
 * the statement, as the single read failed its run.
 *
 * The statements run outside every job's context (currentJob.exit): the
 * connection is the thread's, not one job's, so a stopped job (run_connections.ts)
 * cancels no other job's read.
 */
import type pg from 'pg';
import { loadStepsOf, type LoadedSteps, type StepClaim } from '../queue/steps.ts';
import { takeWaits, type WaitClaim, type WaitDecision } from '../queue/take_wait.ts';
import { currentJob } from './escapes.ts';

/** Requests in one statement at most. */
export const MAX_BATCH = 500;
const CONFLICT_RETRIES = 3;
const CONFLICTS = new Set(['40001', '40P01']);

interface Pending<Req, Res> {
  req: Req;
  resolve(res: Res): void;
  reject(err: unknown): void;
}

class Gatherer<Req, Res> {
  private waiting: Array<Pending<Req, Res>> = [];
  private busy = false;

  constructor(private readonly send: (reqs: Req[]) => Promise<Res[]>) {}

  ask(req: Req): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      this.waiting.push({ req, resolve, reject });
      this.kick();
    });
  }

  private kick(): void {
    if (this.busy || this.waiting.length === 0) return;
    this.busy = true;
    currentJob.exit(() => setImmediate(() => void this.flush()));
  }

  private async flush(): Promise<void> {
    const batch = this.waiting.splice(0, MAX_BATCH);
    try {
      const reqs = batch.map((p) => p.req);
      let results: Res[] | undefined;
      for (let attempt = 0; results === undefined; attempt++) {
        try {
          results = await this.send(reqs);
        } catch (err) {
          if (attempt >= CONFLICT_RETRIES || !CONFLICTS.has((err as { code?: string }).code ?? '')) throw err;
        }
      }
      batch.forEach((p, i) => p.resolve(results[i] as Res));
    } catch (err) {
      for (const p of batch) p.reject(err);
    } finally {
      this.busy = false;
      this.kick();
    }
  }
}

/** A thread's gathered step reads. */
export interface StepReads {
  load(run: StepClaim): Promise<LoadedSteps>;
  takeWait(wait: WaitClaim): Promise<WaitDecision>;
}

/** The step reads of a thread whose tasks' pool `db` opens (on first use). */
export function createStepReads(db: () => pg.Pool, schema: string): StepReads {
  const loads = new Gatherer<StepClaim, LoadedSteps>((runs) => loadStepsOf(db(), schema, runs));
  const waits = new Gatherer<WaitClaim, WaitDecision>((ws) => takeWaits(db(), schema, ws));
  return {
    load: (run) => loads.ask({ id: run.id, token: run.token }),
    takeWait: (wait) => waits.ask({ id: wait.id, token: wait.token, name: wait.name }),
  };
}
