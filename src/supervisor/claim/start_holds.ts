/**
 * Rate-limited jobs a fetcher has claimed and holds until their start slot.
 *
 * A claim names each job's slot by the database's clock (claim_limited.ts);
 * the claim strategy converts it to the local clock with the offset the claims
 * measure, and says how far that may be off (db_clock.ts, claim/limited.ts).
 * The job is given the window its task may start in (ClaimedJob.startWindow,
 * checked in the worker thread just before the task): the local readings at
 * which it starts within [slot, slot + guard] by the database's clock whatever
 * that error (queue/rate_slots.ts, startWindow, says why that keeps the limit
 * on the starts tasks see). Jobs leave in groups by their wait, when their
 * window opens (a narrow one a little before: dispatchLeadMs), for `deliver`
 * (or `handBack` while paused).
 *
 * Held jobs are claimed: fences() gives them to the heartbeat, whose renewals
 * keep their leases, and leaseLost() drops those it found gone. No hold may
 * outlive its lease: a slot further ahead than half a lease (a clock gone
 * wrong) is handed back at once, like a window already missed and a slot the
 * clock's error leaves no window for (the next claim measures the clock first:
 * clock_gate.ts); each is claimed again for a new slot, without using an attempt.
 */
import { startWindow } from '../../queue/claim_limited.ts';
import type { ClaimedJob, Fence } from '../../queue/types.ts';

/**
 * A held job whose start window is narrow goes to the dispatcher this long
 * before the window opens, so that the hand-off to its thread does not eat
 * into it; the thread waits for the window itself (worker/start_window.ts).
 * Short, because the job takes one of the queue's places from then on: at
 * 5 ms, 50 places could start at most 10,000 jobs a second whatever the limit.
 */
export const DISPATCH_LEAD_MS = 2;

/**
 * A held job whose start window is at least this wide goes to the dispatcher
 * when the window opens, not before: the hand-off (a timer a millisecond or
 * two late, a message to the thread) then takes a little of the window
 * instead of holding a place while the thread waits. A window is
 * guard − 2 × the clock's error − 1 wide (queue/rate_slots.ts), so 22 ms for
 * a 1-s limit on a 1-ms error; the lead stays only for an error above 7 ms
 * (periods of 1 s or more: a 25-ms guard) or above 2 ms (600 ms or less: a
 * 15-ms guard), best round trips over about 11 and 1 ms.
 *
 * Measured on the `limits` scenario's rateLimit 100,000/s (50 places, 20,000
 * no-op jobs, a scratch switch between the two rules in one build, rounds
 * interleaved): sent when the window opens, 1.11 times as fast as sent 2 ms
 * ahead at the median (9 rounds: faster in 8, even in one; 1.06 and 1.13 in
 * two earlier runs of 7 and 9), and 0.90 of the unlimited queue in the
 * scenario (0.79 before). Jobs that reached their thread past the window
 * (handed back, no attempt used) were 50 to 100 of 20,000 either way.
 * Earlier, 5 ms ahead ran 6,400 jobs/s, 2 ms 10,200 and 1 ms 11,200, where
 * the unlimited queue ran 18,100.
 */
export const LEADLESS_WINDOW_MS = 10;

/** How long before its start window a held job goes to the dispatcher. */
export function dispatchLeadMs(window: { notBeforeMs: number; notAfterMs: number }): number {
  return window.notAfterMs - window.notBeforeMs >= LEADLESS_WINDOW_MS ? 0 : DISPATCH_LEAD_MS;
}

export class StartHolds {
  private readonly groups = new Map<NodeJS.Timeout, ClaimedJob[]>();
  private held = 0;

  constructor(
    private readonly options: {
      /** The local clock (ms since the epoch). */
      now: () => number;
      leaseMs: number;
      deliver: (jobs: ClaimedJob[]) => void;
      handBack: (jobs: ClaimedJob[], reason: string) => void;
      paused: () => boolean;
    },
  ) {}

  /** How many jobs are held. */
  get size(): number {
    return this.held;
  }

  /**
   * Holds each job until its start window (ClaimResult.slots: slots by the
   * local clock, same order, of a limit of `periodMs`, off by up to `errorMs`).
   */
  add(jobs: ClaimedJob[], slots: { atMs: number[]; periodMs: number; errorMs: number }): void {
    const { leaseMs } = this.options;
    const now = this.options.now();
    const byWait = new Map<number, ClaimedJob[]>();
    const missed: ClaimedJob[] = [];
    const tooFar: ClaimedJob[] = [];
    const uncertain: ClaimedJob[] = [];
    jobs.forEach((job, i) => {
      const window = startWindow(slots.atMs[i] ?? now, slots.errorMs, slots.periodMs);
      if (window === null) {
        uncertain.push(job);
        return;
      }
      job.startWindow = window;
      const wait = Math.max(0, Math.round(window.notBeforeMs - dispatchLeadMs(window) - now));
      if (window.notAfterMs < now) missed.push(job);
      else if (wait > leaseMs / 2) tooFar.push(job);
      else byWait.set(wait, [...(byWait.get(wait) ?? []), job]);
    });
    const { handBack } = this.options;
    if (missed.length > 0) handBack(missed, 'missed its rate-limit start slot before dispatch');
    if (tooFar.length > 0) handBack(tooFar, 'rate-limit start slot further ahead than half a lease');
    if (uncertain.length > 0)
      handBack(
        uncertain,
        `database clock too uncertain (±${slots.errorMs.toFixed(1)} ms) for its rate-limit start slot`,
      );
    for (const [wait, group] of byWait) this.hold(group, wait);
  }

  fences(): Fence[] {
    const out: Fence[] = [];
    for (const jobs of this.groups.values()) for (const j of jobs) out.push({ id: j.id, token: j.token });
    return out;
  }

  /** Drops the held jobs of these claims: they were lost, nothing of them may start. */
  leaseLost(tokens: string[]): void {
    if (this.held === 0) return;
    const lost = new Set(tokens);
    for (const [timer, jobs] of this.groups) {
      const kept = jobs.filter((j) => !lost.has(j.token));
      if (kept.length === jobs.length) continue;
      this.held -= jobs.length - kept.length;
      if (kept.length > 0) this.groups.set(timer, kept);
      else {
        clearTimeout(timer);
        this.groups.delete(timer);
      }
    }
  }

  /** Hands every held job back now (paused, stopping). */
  handBackAll(reason: string): void {
    for (const [timer, jobs] of this.groups) {
      clearTimeout(timer);
      this.groups.delete(timer);
      this.held -= jobs.length;
      this.options.handBack(jobs, reason);
    }
  }

  private hold(jobs: ClaimedJob[], wait: number): void {
    if (wait < 1) {
      this.options.deliver(jobs);
      return;
    }
    this.held += jobs.length;
    const timer = setTimeout(() => {
      const group = this.groups.get(timer);
      if (!group) return;
      this.groups.delete(timer);
      this.held -= group.length;
      if (this.options.paused()) this.options.handBack(group, 'queue paused');
      else this.options.deliver(group);
    }, wait);
    this.groups.set(timer, jobs);
  }
}
