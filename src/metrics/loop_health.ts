/**
 * Which supervisor loops have been failing for longer than a lease.
 *
 * Built on events only: every loop reports a failed round as `db:error`
 * `{ loop }`. A streak starts at a loop's first error and lasts while errors
 * keep coming; it ends at a sign of success (a claim, an outcome written, a
 * lease reaped, jobs cleaned, a schedule fired, or `db:recovered`: a periodic
 * loop's round that succeeded after failed ones, such as a heartbeat), when the database answers
 * again after errors that only said it was unreachable (`databaseAnswered`), or
 * after `quietMs` without an error (longer than the loops' longest backoff plus
 * a bounded statement).
 * A streak older than `leaseMs` is a failing loop: `loop:failed` is emitted
 * once, `/readyz` answers 503 naming it, and `jobvisor_loop_failing_seconds`
 * reports its age; `loop:recovered` follows when the streak ends.
 */
import { isOutageError } from '../errors.ts';
import type { SupervisorEvents } from '../supervisor/events.ts';

export interface Streak {
  since: number;
  last: number;
  announced: boolean;
  /** The last error said only that the database was unreachable (not a conflict, not a bad row). */
  outage: boolean;
}

export interface FailingLoop {
  loop: string;
  failingMs: number;
}

/**
 * Loops whose writes may be dropped by design (progress values: the next one,
 * or the job's done write, supersedes a lost one; the per-minute rollup of
 * finished jobs, which only the dashboard's charts read). Their errors are
 * logged and counted, but never make the supervisor unready.
 */
const BEST_EFFORT_LOOPS = new Set(['progress', 'rollup']);

/** Default quiet time that ends a streak: the 30 s backoff cap (+20 % jitter) plus a statement bound. */
export const DEFAULT_QUIET_MS = 75_000;

/** The decision, pure: streaks still open at `now` and older than `leaseMs`, oldest first. */
export function failingLoops(
  streaks: ReadonlyMap<string, Streak>,
  now: number,
  options: { leaseMs: number; quietMs: number },
): FailingLoop[] {
  const out: FailingLoop[] = [];
  for (const [loop, s] of streaks) {
    if (now - s.last > options.quietMs) continue;
    if (now - s.since > options.leaseMs) out.push({ loop, failingMs: now - s.since });
  }
  return out.sort((a, b) => b.failingMs - a.failingMs);
}

export class LoopHealth {
  private readonly streaks = new Map<string, Streak>();
  private timer: NodeJS.Timeout | undefined;
  private readonly quietMs: number;

  constructor(
    private readonly events: SupervisorEvents,
    private readonly options: { leaseMs: number; quietMs?: number; now?: () => number },
  ) {
    this.quietMs = options.quietMs ?? DEFAULT_QUIET_MS;
    events.on('db:error', ({ loop, err }) => {
      if (!BEST_EFFORT_LOOPS.has(loop)) this.failed(loop, isOutageError(err));
    });
    events.on('db:recovered', ({ loop }) => this.ok(loop));
    events.on('job:claimed', ({ queue }) => this.ok(`fetcher:${queue}`));
    const completer = () => this.ok('completer');
    events.on('job:completed', completer);
    events.on('job:retried', completer);
    events.on('job:dead', completer);
    events.on('job:snoozed', completer);
    events.on('lease:reaped', () => this.ok('reaper'));
    events.on('jobs:cleaned', () => this.ok('cleanup'));
    events.on('schedule:fired', () => this.ok('scheduler'));
  }

  /** Checks every second for streaks that crossed the lease or went quiet. */
  start(): void {
    this.timer ??= setInterval(() => this.check(), 1000);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  failing(): FailingLoop[] {
    return failingLoops(this.streaks, this.now(), { leaseMs: this.options.leaseMs, quietMs: this.quietMs });
  }

  /**
   * The database answered a query at `at` (the readiness probe): streaks of
   * loops whose errors only said it was unreachable, all before then, end.
   */
  databaseAnswered(at: number): void {
    for (const [loop, s] of this.streaks) if (s.outage && s.last <= at) this.ok(loop);
  }

  /** Emits loop:failed for streaks past the lease and loop:recovered for streaks that ended. */
  check(): void {
    const now = this.now();
    for (const [loop, s] of this.streaks) {
      if (now - s.last > this.quietMs) this.ok(loop);
      else if (!s.announced && now - s.since > this.options.leaseMs) {
        s.announced = true;
        this.events.emit('loop:failed', { loop, failingMs: now - s.since });
      }
    }
  }

  private failed(loop: string, outage: boolean): void {
    const now = this.now();
    const s = this.streaks.get(loop);
    if (s) Object.assign(s, { last: now, outage });
    else this.streaks.set(loop, { since: now, last: now, announced: false, outage });
  }

  private ok(loop: string): void {
    const s = this.streaks.get(loop);
    if (!s) return;
    this.streaks.delete(loop);
    if (s.announced) this.events.emit('loop:recovered', { loop, failedMs: this.now() - s.since });
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }
}
