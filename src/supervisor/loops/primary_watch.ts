/**
 * Whether this supervisor reaches a writable primary, and what it does when it
 * does not.
 *
 * States: writable → unwritable (a loop's round failed because the database
 * was unreachable, or because the server takes no writes) → writable (a probe
 * found a server that takes writes) … → stopped.
 *
 * While unwritable, a probe asks the server reached through the pool every
 * `probeMs` whether it takes writes (`readServerRole`). The pool refuses new
 * connections to a read-only server (src/db/pool.ts) and destroys the ones
 * whose statement failed as read-only, so each probe goes out through the
 * endpoint afresh: it finds the new primary as soon as the endpoint leads to
 * one. The first sign of a read-only server in an episode emits
 * `database:read-only` once (one log line, /readyz names it); the end emits
 * `database:writable` with how long it lasted and whether it was a failover:
 * a read-only server was seen, or the primary reached is another server than
 * before (its address), and calls the `writable` hook: the supervisor then
 * reconnects LISTEN and claims at once instead of waiting for backoffs and the
 * poll. Its inputs are called by the supervisor's hooks (build_hooks.ts), never
 * taken from the event map: `failed()` for every failed database round,
 * `listenerReadOnly()` when LISTEN was refused by a standby. The primary's
 * `synchronous_standby_names`, read then and at start, says whether claims
 * must commit durably (`durableClaims`).
 */
import { isOutageError, isReadOnlyDbError } from '../../errors.ts';
import { readServerRole } from '../../queue/server_role.ts';
import type { Db } from '../../queue/sql.ts';
import type { SupervisorEvents } from '../events.ts';
import type { Hooks } from '../hooks.ts';
import { safeEmit } from '../safe_emit.ts';

/** How often an unwritable supervisor asks whether the endpoint leads to a primary again. */
export const PRIMARY_PROBE_MS = 250;
/** Loops whose failures say nothing about the primary (their writes may be dropped by design). */
const IGNORED_LOOPS = new Set(['progress']);

export class PrimaryWatch {
  private lostAt: number | undefined;
  private readOnlySeen = false;
  private address: string | undefined;
  private synchronousStandbys = false;
  private timer: NodeJS.Timeout | undefined;
  private probing: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly options: {
      db: Db;
      events: SupervisorEvents;
      /** Its `writable` is called once a writable primary is reached again. */
      hooks: Pick<Hooks, 'writable'>;
      probeMs?: number;
      now?: () => number;
    },
  ) {}

  /** A round of `loop` failed on the database: an outage or a read-only server starts an episode. */
  failed(loop: string, err: unknown): void {
    if (IGNORED_LOOPS.has(loop)) return;
    if (isReadOnlyDbError(err)) this.readOnly(loop, err);
    else if (isOutageError(err)) this.lost();
  }

  /** LISTEN was refused by a server in recovery. */
  listenerReadOnly(error: string): void {
    this.readOnly('listener', new Error(error));
  }

  /** Claims commit durably: the primary has synchronous standbys (claim.ts says why). */
  get durableClaims(): boolean {
    return this.synchronousStandbys;
  }

  /** True while no writable primary is reached. */
  get unwritable(): boolean {
    return this.lostAt !== undefined;
  }

  /** True while the server reached was found read-only (this episode). */
  get readOnlyServer(): boolean {
    return this.lostAt !== undefined && this.readOnlySeen;
  }

  /** Remembers which server is the primary now (best effort; a failure leaves it unknown). */
  async start(): Promise<void> {
    this.stopped = false;
    const role = await readServerRole(this.options.db).catch(() => undefined);
    if (role?.writable) {
      this.address = role.address;
      this.synchronousStandbys = role.synchronousStandbys;
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.probing;
  }

  /** One probe now (tests; also what the timer runs). */
  runOnce(): Promise<void> {
    this.probing ??= this.probe().finally(() => (this.probing = undefined));
    return this.probing;
  }

  private readOnly(loop: string, err: unknown): void {
    this.lost();
    if (this.readOnlySeen) return;
    this.readOnlySeen = true;
    const error = err instanceof Error ? err.message : String(err);
    safeEmit(this.options.events, 'database:read-only', { loop, error });
  }

  private lost(): void {
    if (this.stopped) return;
    this.lostAt ??= this.now();
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.stopped || this.lostAt === undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.runOnce().then(() => this.schedule());
    }, this.options.probeMs ?? PRIMARY_PROBE_MS);
    this.timer.unref();
  }

  private async probe(): Promise<void> {
    if (this.lostAt === undefined) return;
    let role;
    try {
      role = await readServerRole(this.options.db);
    } catch (err) {
      if (isReadOnlyDbError(err)) this.readOnly('primary-watch', err);
      return;
    }
    if (!role.writable) {
      this.readOnly('primary-watch', new Error(`server ${role.address} is read-only`));
      return;
    }
    const since = this.lostAt;
    if (since === undefined) return;
    const failover = this.readOnlySeen || (this.address !== undefined && this.address !== role.address);
    const readOnly = this.readOnlySeen;
    this.lostAt = undefined;
    this.readOnlySeen = false;
    this.address = role.address;
    this.synchronousStandbys = role.synchronousStandbys;
    safeEmit(this.options.events, 'database:writable', {
      unwritableMs: Math.max(0, this.now() - since),
      readOnly,
      failover,
      address: role.address,
    });
    this.options.hooks.writable();
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }
}
