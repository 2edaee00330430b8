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
 * on the starts tasks see). Jobs leave in groups by their wait,
 * DISPATCH_LEAD_MS before their window opens, for `deliver` (or `handBack`
 * while paused).
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
 * A held job goes to the dispatcher this long before its slot, so that the
 * hand-off to its thread does not eat into its start window; the thread
 * waits for the slot itself (worker/start_window.ts). Short, because the job
 * takes one of the queue's places from then on: at 5 ms, 50 places could start
 * at most 10,000 jobs a second whatever the limit. Measured on the `limits`
 * scenario's rateLimit 100,000/s (50 places): holding up to 4 × concurrency,
 * 2 ms ahead ran 10,200 jobs/s and 1 ms 11,200; 5 ms ahead, even holding up
 * to 10 × concurrency, 6,400; the unlimited queue 18,100. The window itself is
 * at least 15 ms wide.
 */
export const DISPATCH_LEAD_MS = 2;

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
      const wait = Math.max(0, Math.round(window.notBeforeMs - DISPATCH_LEAD_MS - now));
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
