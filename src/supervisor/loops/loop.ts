/**
 * A periodic loop with `start()`, `stop()` and `runOnce()`.
 *
 * States: idle → running (timer armed or a round in progress) → stopped.
 * `stop()` is idempotent, safe before `start()`, and resolves when the round in
 * progress has ended. A failing round never stops the loop: it is reported and
 * the next round comes after a jittered, growing delay (capped at
 * `maxBackoffMs`, default 30 s).
 */
import type { SupervisorEvents } from '../events.ts';
import { NO_HOOKS, reportDbError, type Hooks } from '../hooks.ts';
import { safeEmit } from '../safe_emit.ts';

export interface LoopOptions {
  name: string;
  intervalMs: number;
  /** One round. Resolving `'more'` says work is left over: the next round comes after `moreDelayMs`. */
  run: () => Promise<unknown>;
  /** The delay after a round that resolved `'more'` (default: the interval). */
  moreDelayMs?: number;
  onError: (err: unknown) => void;
  /**
   * Called once when a round succeeds after failed ones: what ends the loop's
   * failing streak when nothing else it does says so (a heartbeat, a reaper
   * with nothing to reap). Must not throw.
   */
  onRecovered?: () => void;
  /** Longest delay after failed rounds (default 30 s). */
  maxBackoffMs?: number;
}

export class Loop {
  private timer: NodeJS.Timeout | undefined;
  private current: Promise<void> | undefined;
  private stopped = false;
  private started = false;
  private failures = 0;
  private more = false;

  constructor(private readonly options: LoopOptions) {}

  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    this.schedule(jittered(this.options.intervalMs));
  }

  /** Runs one round now (tests, or a nudge). Concurrent calls share the round. */
  runOnce(): Promise<void> {
    this.current ??= this.round().finally(() => {
      this.current = undefined;
    });
    return this.current;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.current;
  }

  private async round(): Promise<void> {
    const failedBefore = this.failures > 0;
    try {
      this.more = (await this.options.run()) === 'more';
      this.failures = 0;
    } catch (err) {
      this.failures++;
      this.options.onError(err);
      return;
    }
    if (failedBefore) this.options.onRecovered?.();
  }

  private schedule(ms: number) {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.runOnce().then(() => {
        const backoff =
          this.failures === 0
            ? this.more
              ? (this.options.moreDelayMs ?? this.options.intervalMs)
              : this.options.intervalMs
            : Math.min(this.options.maxBackoffMs ?? 30_000, this.options.intervalMs * 2 ** Math.min(this.failures, 5));
        this.schedule(jittered(backoff));
      });
    }, ms);
    this.timer.unref();
  }
}

/** ±20 %: replicas started together drift apart instead of querying in step. */
export function jittered(ms: number): number {
  return Math.max(1, Math.round(ms * (0.8 + Math.random() * 0.4)));
}

/**
 * `onError` and `onRecovered` that report a loop's rounds as `db:error` (to the
 * hooks too: hooks.ts) and `db:recovered` of `loop`.
 */
export function reportedAs(
  events: SupervisorEvents,
  loop: string,
  hooks: Hooks = NO_HOOKS,
): Pick<LoopOptions, 'onError' | 'onRecovered'> {
  return {
    onError: (err) => reportDbError(hooks, events, loop, err),
    onRecovered: () => safeEmit(events, 'db:recovered', { loop }),
  };
}
