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
 * on the starts tasks see). Jobs leave in groups by their wait, a little
 * before their window opens (or, under a fast limit, when it opens:
 * dispatchLeadMs), for `deliver` (or `handBack` while paused).
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
 * A held job goes to the dispatcher this long before its start window opens
 * (but see dispatchLeadMs), so that the hand-off to its thread does not eat
 * into the window; the thread waits for the window itself
 * (worker/start_window.ts). Short, because the job takes one of the queue's
 * places from then on: at 5 ms, 50 places could start at most 10,000 jobs a
 * second whatever the limit.
 */
export const DISPATCH_LEAD_MS = 2;

/**
 * The narrowest start window a leadless queue's job goes to the dispatcher at,
 * rather than DISPATCH_LEAD_MS before. A window is guard − 2 × the clock's
 * error − 1 wide (queue/rate_slots.ts): 22 ms for a 1-s limit on a 1-ms error.
 * So the lead stays for an error above 7 ms (periods of 1 s or more: a 25-ms
 * guard) or above 2 ms (600 ms or less: a 15-ms guard).
 */
export const LEADLESS_WINDOW_MS = 10;

/**
 * Whether a queue's rate limit is fast enough that the lead would hold over a
 * tenth of its places (dispatchLeadMs); false without a rate limit. A per-key
 * limit counts as one key's rate: its queue may start more, so it keeps the
 * lead sooner than it needs to.
 */
export function leadlessQueue(rate: { count: number; periodMs: number } | undefined, concurrency: number): boolean {
  return rate !== undefined && (rate.count / rate.periodMs) * DISPATCH_LEAD_MS > concurrency / 10;
}

/**
 * When a held job goes to the dispatcher, in ms before its start window opens.
 *
 * DISPATCH_LEAD_MS, unless the lead would cost the queue its speed: each job
 * then holds a place for up to the lead while its thread waits, so at the
 * rate limit that is `count / period × lead` places on average, for nothing.
 * A queue whose limit would have the lead hold more than a tenth of its places
 * (`leadless`: with 50 places, a limit above 2,500 starts a second) sends a
 * job when its window opens instead, if the window is at least
 * LEADLESS_WINDOW_MS wide; the hand-off (a timer a millisecond or two late, a
 * message to the thread) then takes a little of the window. A slower limit
 * keeps the lead, which costs it almost no place and keeps the hand-off out of
 * the window: sent at the window, the chaos test's 200/s over three
 * supervisors on a loaded machine had 377 and 387 jobs reach their thread past
 * the window (92.7 % and 92.9 % of the slots started), against 73 to 172 in
 * its runs before (95.3 to 97.0 %).
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
export function dispatchLeadMs(window: { notBeforeMs: number; notAfterMs: number }, leadless: boolean): number {
  return leadless && window.notAfterMs - window.notBeforeMs >= LEADLESS_WINDOW_MS ? 0 : DISPATCH_LEAD_MS;
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
      /** The queue's rate is fast enough to send jobs without the lead (leadlessQueue()). */
      leadless: boolean;
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
      const wait = Math.max(0, Math.round(window.notBeforeMs - dispatchLeadMs(window, this.options.leadless) - now));
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
