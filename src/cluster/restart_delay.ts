/**
 * The primary's decisions about a slot's process: how long it waits before
 * restarting one that died, and when one is due for recycling.
 *
 * How long the primary waits before restarting a slot whose process died.
 *
 * The first crash restarts at once: a native crash in one task should cost
 * the slot only a process start. Each further crash in a row doubles the wait
 * from 1 s, capped at 30 s (1, 2, 4, 8, 16, 30 s), so a child that cannot start
 * (a bad deploy, a database refusing connections) does not spin the CPU. A
 * child that stayed up for `STABLE_MS` ends the streak. Kubernetes'
 * CrashLoopBackOff is the same shape with a 10 s start and a 5 min cap, which
 * is why a crash handled here costs far less than a crashed pod.
 */
export const STABLE_MS = 30_000;
export const MAX_RESTART_DELAY_MS = 30_000;

/** The wait before the restart that follows the `crashes`-th crash in a row (1-based). Pure. */
export function restartDelayMs(crashes: number): number {
  if (crashes <= 1) return 0;
  return Math.min(MAX_RESTART_DELAY_MS, 1000 * 2 ** (crashes - 2));
}

/** The crash streak after a process that lived `livedMs` died. Pure. */
export function nextStreak(streak: number, livedMs: number): number {
  return livedMs >= STABLE_MS ? 1 : streak + 1;
}

/** Why a process is due for recycling (cluster.maxJobs, cluster.maxRssMb; 0 = off), or undefined. Pure. */
export function recycleReason(
  used: { jobs: number; rssBytes: number },
  limits: { maxJobs: number; maxRssMb: number },
): 'maxJobs' | 'maxRssMb' | undefined {
  if (limits.maxJobs > 0 && used.jobs >= limits.maxJobs) return 'maxJobs';
  if (limits.maxRssMb > 0 && used.rssBytes > limits.maxRssMb * 1024 * 1024) return 'maxRssMb';
  return undefined;
}
