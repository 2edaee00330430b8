/**
 * LISTEN jobvisor_jobs on a dedicated connection: a commit of new jobs wakes the
 * fetchers at once; polling is only the fallback.
 *
 * States: connecting → listening → (lost) → connecting … → stopped.
 * A connection can die loudly (error/end: reconnect with jittered backoff) or
 * silently (a proxy that stops forwarding): every `checkIntervalMs` the
 * supervisor notifies itself and reconnects if the ping does not come back.
 * On a server in recovery LISTEN fails ("cannot execute LISTEN during
 * recovery"): the connection is dropped like a lost one, the event says it was
 * read-only, and `reconnectNow()` skips the backoff once a primary is back.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Db } from '../../db/pool.ts';
import { isReadOnlyDbError } from '../../errors.ts';
import { jittered } from '../loops/loop.ts';
import type { SupervisorEvents } from '../events.ts';
import type { Hooks } from '../hooks.ts';

export const CHANNEL = 'jobvisor_jobs';
/** Pause and resume (migration 006's trigger on jobvisor.queues); the payload is the queue. */
export const QUEUES_CHANNEL = 'jobvisor_queues';

export interface ListenerOptions {
  url: string;
  /** Sends the self-ping; any pool of the same database. */
  db: Db;
  /** A notification's payload: the queue with new or re-queued jobs ('' when unknown). */
  onNotify: (queue: string) => void;
  /** A queue was paused or resumed ('' after a reconnect: anything may have changed). */
  onQueueState?: (queue: string) => void;
  events: SupervisorEvents;
  /** Its `listenerReadOnly` is called when LISTEN is refused by a standby. */
  hooks: Pick<Hooks, 'listenerReadOnly'>;
  checkIntervalMs?: number;
  pingTimeoutMs?: number;
}

export class Listener {
  private client: pg.Client | undefined;
  private stopped = false;
  private connected = false;
  private reconnects = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private checkTimer: NodeJS.Timeout | undefined;
  private pingToken: string | undefined;
  private pingTimer: NodeJS.Timeout | undefined;
  private everConnected = false;

  constructor(private readonly options: ListenerOptions) {}

  get isListening(): boolean {
    return this.connected;
  }

  async start(): Promise<void> {
    await this.connect();
    this.checkTimer = setInterval(() => void this.check(), this.options.checkIntervalMs ?? 5000);
    this.checkTimer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.checkTimer);
    clearTimeout(this.pingTimer);
    const client = this.client;
    this.client = undefined;
    this.connected = false;
    await client?.end().catch(() => {});
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client({
      connectionString: this.options.url,
      application_name: 'jobvisor-listener',
      keepAlive: true,
      connectionTimeoutMillis: 10_000,
    });
    this.client = client;
    client.on('notification', (msg) => {
      const payload = msg.payload ?? '';
      if (msg.channel === QUEUES_CHANNEL) {
        this.options.onQueueState?.(payload);
        return;
      }
      if (this.pingToken !== undefined && payload === `ping:${this.pingToken}`) {
        this.pingToken = undefined;
        clearTimeout(this.pingTimer);
        return;
      }
      this.options.onNotify(payload);
    });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, new Error('listener connection ended')));
    try {
      await client.connect();
      await client.query(
        this.options.onQueueState ? `LISTEN ${CHANNEL}; LISTEN ${QUEUES_CHANNEL}` : `LISTEN ${CHANNEL}`,
      );
    } catch (err) {
      this.lost(client, err);
      return;
    }
    if (this.client !== client) return;
    this.connected = true;
    this.options.events.emit('listener:connected', { reconnect: this.everConnected });
    this.everConnected = true;
    this.reconnects = 0;
    // Jobs committed (and pauses) while we were not listening were never announced.
    this.options.onQueueState?.('');
    this.options.onNotify('');
  }

  private lost(client: pg.Client, err: unknown): void {
    if (this.client !== client || this.stopped) return;
    this.client = undefined;
    this.connected = false;
    this.pingToken = undefined;
    clearTimeout(this.pingTimer);
    client.end().catch(() => {});
    const error = err instanceof Error ? err.message : String(err);
    // "cannot execute LISTEN during recovery": a standby, not a lost network.
    const readOnly = isReadOnlyDbError(err);
    if (readOnly) this.options.hooks.listenerReadOnly(error);
    this.options.events.emit('listener:lost', { error, ...(readOnly && { readOnly: true }) });
    const delay = jittered(Math.min(10_000, 100 * 2 ** Math.min(this.reconnects++, 7)));
    this.retryTimer = setTimeout(() => void this.connect(), delay);
    this.retryTimer.unref();
  }

  /**
   * A writable primary is reached again (primary_watch.ts): a listener waiting
   * out its backoff reconnects now, with its backoff reset.
   */
  reconnectNow(): void {
    if (this.stopped || this.client) return;
    clearTimeout(this.retryTimer);
    this.reconnects = 0;
    void this.connect();
  }

  /** Self-notification: proves the connection still delivers. */
  private async check(): Promise<void> {
    const client = this.client;
    if (!client || !this.connected || this.pingToken) return;
    const token = randomUUID();
    this.pingToken = token;
    try {
      await this.options.db.query('SELECT pg_notify($1, $2)', [CHANNEL, `ping:${token}`]);
    } catch {
      this.pingToken = undefined; // the database is away; the pool's errors say so
      return;
    }
    this.pingTimer = setTimeout(() => {
      if (this.pingToken === token) this.lost(client, new Error('listener stopped delivering notifications'));
    }, this.options.pingTimeoutMs ?? 3000);
    this.pingTimer.unref();
  }
}
