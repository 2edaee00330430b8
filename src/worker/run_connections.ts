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
 * another job's statement.
 *
 * States per connection: lent to a job → (cancelled) → handed back (closed
 * when cancelled).
 */
import type pg from 'pg';
import { cancelStatement } from '../db/cancel.ts';

const CANCELLED = Object.assign(new Error('ctx.db: connection of a stopped job, closed'), {
  code: 'task_db_cancelled',
});

export class RunConnections {
  private readonly byRun = new Map<object, Set<pg.PoolClient>>();
  private readonly cancelled = new WeakSet<pg.PoolClient>();

  /** `client` is `run`'s until it is handed back: its `release` is wrapped to say so. */
  lend(run: object, client: pg.PoolClient): void {
    let held = this.byRun.get(run);
    if (!held) this.byRun.set(run, (held = new Set()));
    held.add(client);
    // pg-pool sets a fresh release on each lend (a closure: no `this`).
    const release = client.release.bind(client);
    client.release = (err?: Error | boolean) => {
      const mine = this.byRun.get(run);
      mine?.delete(client);
      if (mine?.size === 0) this.byRun.delete(run);
      release(err || (this.cancelled.has(client) ? CANCELLED : undefined));
    };
  }

  /**
   * Cancels whatever `run`'s connections are running (an idle one ignores it)
   * and marks them to be closed when handed back.
   * @returns how many connections `run` held.
   */
  cancel(run: object): number {
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
