/**
 * Which of this supervisor's queues are paused, from `jobvisor.queues`.
 *
 * Re-read on every notification of jobvisor_queues (a pause or resume
 * commits and tells every supervisor at once) and every `intervalMs` as the
 * fallback when a notification is lost: a tiny table, one read a second.
 * Each change is applied once: paused → onPause(queue), resumed → onResume.
 * The first read reports every served queue's state ('queue:paused' or
 * 'queue:resumed'), so the paused gauge starts right.
 *
 * Fresh or stale: the paused set is stale from start-up, and again whenever a
 * read fails, until a read succeeds. The fetchers call beforeClaim(), which
 * reads first when the set is stale or notifications are not being delivered
 * (the listener reconnects with back-off after an outage, and this loop backs
 * off up to 30 s after failures): a pause committed as soon as the database
 * answers again is seen by the first claim after it, not seconds later.
 */
import { pausedQueues } from '../../queue/pause.ts';
import type { Store } from '../../queue/sql.ts';
import type { SupervisorEvents } from '../events.ts';
import type { Hooks } from '../hooks.ts';
import { Loop, reportedAs } from './loop.ts';

export interface PauseWatchOptions {
  store: Store;
  queues: readonly string[];
  intervalMs: number;
  /** True while pause and resume notifications are being delivered (the listener is connected). */
  notified: () => boolean;
  onPause: (queue: string) => void;
  onResume: (queue: string) => void;
  events: SupervisorEvents;
  /** Told of failed rounds (none: a loop built alone, in a test). */
  hooks?: Hooks;
}

export class PauseWatch {
  private paused: Set<string> | undefined;
  private readonly loop: Loop;
  private reading: Promise<void> | undefined;
  private next: Promise<void> | undefined;
  private stale = true;

  constructor(private readonly options: PauseWatchOptions) {
    this.loop = new Loop({
      name: 'pause-watch',
      intervalMs: options.intervalMs,
      run: () => this.refresh(),
      ...reportedAs(options.events, 'pause-watch', options.hooks),
    });
  }

  isPaused(queue: string): boolean {
    return this.paused?.has(queue) ?? false;
  }

  start(): void {
    this.loop.start();
  }

  /**
   * Resolves when the paused set can be trusted for a claim: at once while it
   * is fresh and notifications arrive, else after reading it again.
   * @throws the read's database error (the claim should not go ahead).
   */
  beforeClaim(): Promise<void> {
    if (!this.stale && this.options.notified()) return Promise.resolve();
    return this.refresh();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
    await this.reading?.catch(() => {});
    await this.next?.catch(() => {});
  }

  /**
   * Reads the paused set now and applies what changed. A call during a read
   * reads once more after it, and resolves with that read: what it reports
   * was read after the call (a claim must not go ahead on an older read).
   */
  refresh(): Promise<void> {
    if (this.reading) {
      this.next ??= this.reading
        .catch(() => {})
        .then(() => {
          this.next = undefined;
          return this.refresh();
        });
      return this.next;
    }
    this.reading = this.read().finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  private async read(): Promise<void> {
    let now: Set<string>;
    try {
      now = await pausedQueues(this.options.store);
    } catch (err) {
      this.stale = true;
      throw err;
    }
    this.stale = false;
    const before = this.paused;
    this.paused = now;
    for (const queue of this.options.queues) {
      const was = before?.has(queue);
      const is = now.has(queue);
      if (was === is) continue;
      if (is) {
        this.options.onPause(queue);
        this.options.events.emit('queue:paused', { queue });
      } else {
        if (was) this.options.onResume(queue);
        this.options.events.emit('queue:resumed', { queue });
      }
    }
  }
}
