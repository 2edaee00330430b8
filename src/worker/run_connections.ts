/**
 * Which job holds which connection of the thread's ctx.db pool, so that the
 * statements of a stopped job stop too. When a job is aborted (its timeout,
 * a lost lease, shutdown), its task may be awaiting a statement that pg cannot
 * abort; a thread terminated under it closes its socket, but a backend busy in
 * a statement does not notice that, and the statement ran on for as long as it
 * took (each attempt adding one). Here each connection the job holds gets a
 * cancel request (db/cancel.ts) at the abort.
 *
 * A connection is the job's from the moment the pool hands it out in the job's
 * context (`currentJob`, escapes.ts; `pool.query()` borrows and hands back on
 * its own) until it is handed back. A cancelled connection is closed when it
 * is handed back, never lent to another job: a cancel request that arrives
 * late interrupts whatever that connection runs next, which must not be
 * another job's statement. No statement of a stopped job starts after its
 * stop: it is lent no connection (one it was still waiting for, a new
 * connection opening or a full pool, goes back to the pool unused, and its
 * `connect()` or `query()` fails), and a statement it sends on a connection it
 * still holds (the task caught the cancellation and went on) fails at once
 * without reaching the server; that connection is closed when handed back, so
 * a transaction left open on it ends with it.
 *
 * States per connection: lent to a job → (cancelled) → handed back (closed
 * when cancelled). Per job: running → stopped.
 */
import type pg from 'pg';
import { cancelStatement } from '../db/cancel.ts';

const CANCELLED = Object.assign(new Error('ctx.db: connection of a stopped job, closed'), {
  code: 'task_db_cancelled',
});

/** What a stopped job's `ctx.db.connect()` or `ctx.db.query()` rejects with. */
export function stoppedJobError(): Error {
  return Object.assign(
    new Error('ctx.db: this job was stopped (its timeout, a lost lease or shutdown): no new statement runs for it'),
    { code: 'task_db_stopped' },
  );
}

export class RunConnections {
  private readonly byRun = new Map<object, Set<pg.PoolClient>>();
  private readonly cancelled = new WeakSet<pg.PoolClient>();
  private readonly stopped = new WeakSet<object>();

  /**
   * `client` is `run`'s until it is handed back: its `release` is wrapped to say
   * so. @returns false, lending nothing, when `run` has been stopped.
   */
  lend(run: object, client: pg.PoolClient): boolean {
    if (this.stopped.has(run)) return false;
    let held = this.byRun.get(run);
    if (!held) this.byRun.set(run, (held = new Set()));
    held.add(client);
    // pg-pool sets a fresh release on each lend (a closure: no `this`).
    const release = client.release.bind(client);
    client.release = (err?: Error | boolean) => {
      const mine = this.byRun.get(run);
      mine?.delete(client);
      if (mine?.size === 0) this.byRun.delete(run);
      // The lend's own query goes with it: the prototype's serves the next job.
      delete (client as Partial<pg.PoolClient>).query;
      release(err || (this.cancelled.has(client) ? CANCELLED : undefined));
    };
    client.query = this.refusedOnceStopped(run, client);
    return true;
  }

  /** `client.query` for as long as `run` holds it: refused (never sent) once `run` is stopped. */
  private refusedOnceStopped(run: object, client: pg.PoolClient): pg.PoolClient['query'] {
    const { query } = Object.getPrototypeOf(client) as { query: (...args: unknown[]) => unknown };
    return ((...args: unknown[]) => {
      // Cursors and streams (a `submit` method) go through: they report errors their own way.
      const submittable = typeof (args[0] as { submit?: unknown } | null)?.submit === 'function';
      if (!this.stopped.has(run) || submittable) return query.apply(client, args);
      const callback = args.findLast((a) => typeof a === 'function') as ((err: Error) => void) | undefined;
      if (!callback) return Promise.reject(stoppedJobError());
      process.nextTick(() => callback(stoppedJobError()));
      return undefined;
    }) as pg.PoolClient['query'];
  }

  /**
   * Stops `run`: cancels whatever its connections are running (an idle one
   * ignores it), marks them to be closed when handed back, and lends it no more.
   * @returns how many connections `run` held.
   */
  cancel(run: object): number {
    this.stopped.add(run);
    const held = this.byRun.get(run);
    if (!held) return 0;
    for (const client of held) {
      if (this.cancelled.has(client)) continue;
      this.cancelled.add(client);
      void cancelStatement(client);
    }
    return held.size;
  }
}
