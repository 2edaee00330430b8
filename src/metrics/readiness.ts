/**
 * The database half of /readyz: one probe at a time on its own connection
 * (never the pool that carries heartbeats and claims), and answers from a
 * cached result at most `maxAgeMs` old. However many requests arrive, the
 * database sees at most one query per `maxAgeMs`.
 *
 * A probe that gets no answer within `timeoutMs` reports the database
 * unreachable and drops its connection (the next probe opens a new one). So
 * does a probe that finds the server read-only (a standby, a demoted primary).
 * A server that refuses this process for good (a wrong password, a missing
 * database or grant: `connectionRefusal` in errors.ts) is not "unreachable":
 * the answer gives the server's reason and carries the error in `refused`.
 * The server bounds the probe's reads by the same `timeoutMs`: for the session
 * when the connection's session is its own (db/owned_session.ts, set with the
 * connection), else for each probe's transaction only (`SET LOCAL`): through a
 * pooler in transaction mode a session setting would stay on the server
 * connection for whoever runs next.
 */
import pg from 'pg';
import { isMigrated } from '../db/migrate.ts';
import { accessRefused } from '../errors.ts';
import { setIfOwnedSql, startupPid } from '../db/owned_session.ts';
import { setStatementTimeout, timeoutText } from '../db/statement_timeout.ts';
import { readServerRole } from '../queue/server_role.ts';
import type { Readiness } from './server.ts';

/** /readyz while the server reached takes no writes. */
export const READ_ONLY_REASON =
  'database server is read-only (in recovery: a standby or a demoted primary): waiting for a writable primary';

export interface ReadinessProbeOptions {
  url: string;
  schema: string;
  /** Age of a cached answer still served (default 1 s). */
  maxAgeMs?: number;
  /** A probe without an answer this long fails (default 2 s). */
  timeoutMs?: number;
  now?: () => number;
}

export class DatabaseProbe {
  private client: pg.Client | undefined;
  /** The connection's session is its own, with the bound set (else each probe sets it, SET LOCAL). */
  private owned = false;
  private cached: { at: number; result: Readiness } | undefined;
  private probing: Promise<Readiness> | undefined;
  private closed = false;
  /** Probes sent to the database (for tests and the flood scenario). */
  probes = 0;
  /** When the database last answered a probe (ms since the epoch; 0: never). */
  answeredAt = 0;

  constructor(private readonly options: ReadinessProbeOptions) {}

  /** The cached answer if fresh, else the probe in progress (or a new one). Never throws. */
  check(): Promise<Readiness> {
    const now = (this.options.now ?? Date.now)();
    if (this.cached && now - this.cached.at < (this.options.maxAgeMs ?? 1000))
      return Promise.resolve(this.cached.result);
    this.probing ??= this.probe()
      .then((result) => {
        this.cached = { at: (this.options.now ?? Date.now)(), result };
        if (result.ready || result.reason?.startsWith('schema')) this.answeredAt = this.cached.at;
        return result;
      })
      .finally(() => (this.probing = undefined));
    return this.probing;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.probing;
    this.drop();
  }

  private async probe(): Promise<Readiness> {
    const timeoutMs = this.options.timeoutMs ?? 2000;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<Readiness>((resolve) => {
      timer = setTimeout(() => {
        this.drop();
        resolve({ ready: false, reason: `database unreachable (no answer within ${timeoutMs} ms)` });
      }, timeoutMs);
    });
    try {
      return await Promise.race([this.ask(timeoutMs), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async ask(timeoutMs: number): Promise<Readiness> {
    if (this.closed) return { ready: false, reason: 'stopping' };
    this.probes++;
    try {
      const client = await this.connect(timeoutMs);
      const scoped = !this.owned;
      if (scoped) {
        await client.query('BEGIN');
        await setStatementTimeout(client, timeoutMs, 'transaction');
      }
      const writable = (await readServerRole(client)).writable;
      const migrated = writable && (await isMigrated(client, { schema: this.options.schema }));
      if (scoped) await client.query('COMMIT');
      if (!writable) {
        // Its next probe opens a new connection: the endpoint may lead to a primary by then.
        this.drop();
        return { ready: false, reason: READ_ONLY_REASON };
      }
      return migrated ? { ready: true } : { ready: false, reason: 'schema not migrated: run jobvisor migrate' };
    } catch (err) {
      this.drop();
      const refused = accessRefused(err);
      return refused
        ? { ready: false, reason: refused.message, refused }
        : { ready: false, reason: 'database unreachable' };
    }
  }

  private async connect(timeoutMs: number): Promise<pg.Client> {
    if (this.client) return this.client;
    const client = new pg.Client({
      connectionString: this.options.url,
      application_name: 'jobvisor-readiness',
      connectionTimeoutMillis: timeoutMs,
      query_timeout: timeoutMs,
      keepAlive: true,
    });
    client.on('error', () => this.drop());
    this.client = client;
    this.owned = false;
    await client.connect();
    const { rows } = await client.query<{ set: string | null }>(
      `SELECT ${setIfOwnedSql('statement_timeout', 1, 2)} AS set`,
      [timeoutText(timeoutMs), startupPid(client)],
    );
    this.owned = rows[0]?.set != null;
    return client;
  }

  /** Forgets the connection; ending it is not waited for (a silent server never answers). */
  private drop(): void {
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    client.end().catch(() => {});
    (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
  }
}
