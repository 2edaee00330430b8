/**
 * Which supervisor processes have gone silent: a child whose main thread is
 * blocked (a busy loop, a synchronous call that never returns) sends nothing,
 * while its worker threads may run on. A child sends `stats` every second
 * (child.ts) from its event loop; the primary counts, per child, how long it
 * has heard nothing, and a child silent for `limitMs` is hung.
 *
 * The primary's own stalls are not the child's: each tick credits at most
 * MAX_CREDIT_MS of silence, so a primary whose event loop was itself blocked
 * (its timers run before the messages that queued meanwhile) cannot blame its
 * children for the time it did not listen. A child is watched from its first
 * message on (the first thing its IPC side does, before it touches the
 * database or its tasks): loading jobvisor's own modules is not timed.
 *
 * Pure (time is passed in); primary.ts ticks it every TICK_MS.
 */

/** How often the primary ticks the watch. */
export const TICK_MS = 250;
/** The most silence one tick credits (a late tick is the primary's stall, not the child's). */
export const MAX_CREDIT_MS = 1000;
/** The shortest hang bound, whatever the lease: a GC pause or a starved CPU is not a hang. */
export const MIN_HANG_MS = 5000;
/**
 * A child silent this long is listed by /healthz before it is killed. Healthy
 * children under a load average of 30 on 2 vCPUs (20,000 jobs through 2
 * processes under tsx) were silent 2.2 s at the longest.
 */
export const REPORT_SILENT_MS = 3000;

/**
 * The hang bound for a lease: half of it, at least MIN_HANG_MS. The heartbeat
 * renews every lease/3, so a child that stops answering at t still holds its
 * leases until t + 2·lease/3 or later; killed at t + lease/2, its jobs are back
 * (handed back by the primary) before any other supervisor's reaper could take
 * them while its threads still run them. Pure.
 */
export function hangLimitMs(leaseMs: number): number {
  return Math.max(MIN_HANG_MS, Math.round(leaseMs / 2));
}

export class HangWatch<C> {
  private readonly silent = new Map<C, number>();
  private lastTick: number;

  constructor(
    readonly limitMs: number,
    now: number,
  ) {
    this.lastTick = now;
  }

  /** A message from `child`: it answers, its silence starts again. */
  heard(child: C): void {
    this.silent.set(child, 0);
  }

  /** `child` is gone (exited or killed): no longer watched. */
  forget(child: C): void {
    this.silent.delete(child);
  }

  /** How long `child` has been silent (0 when not watched). */
  silentFor(child: C): number {
    return this.silent.get(child) ?? 0;
  }

  /** Every watched child silent for at least `ms`, with how long. */
  silentAtLeast(ms: number): Array<{ child: C; silentMs: number }> {
    return [...this.silent].filter(([, s]) => s >= ms).map(([child, silentMs]) => ({ child, silentMs }));
  }

  /** Credits the time since the last tick (at most MAX_CREDIT_MS); returns the children now hung. */
  tick(now: number): Array<{ child: C; silentMs: number }> {
    const credit = Math.min(Math.max(0, now - this.lastTick), MAX_CREDIT_MS);
    this.lastTick = now;
    for (const [child, s] of this.silent) this.silent.set(child, s + credit);
    return this.silentAtLeast(this.limitMs);
  }
}
