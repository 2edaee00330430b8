/**
 * Slots handed on: a limited queue's slot frees when the job's outcome is
 * written, but the supervisor knows sooner that the task has ended. Its next
 * claim passes those runs (ended, outcome not yet written) and may give their
 * slots to new jobs at once (migration 031, claim_limited_sql.ts).
 *
 * A run may be passed to every claim until its outcome is written. A claim
 * counts the rows it sees, less the runs passed that it finds still running
 * under their claim tokens; a run passed again after its slot went to a new
 * job lends nothing more, since that job's row is counted too. Claims of one
 * queue see each other's rows: the queue's lock orders them, or the keys'
 * locks for a queue limited per key alone, and each counts after its locks.
 * So passing a run again never lets a claim exceed a limit, and leaving it out
 * keeps its slot held until the outcome's write: under globalConcurrency 50 on
 * one supervisor, claims took 42 jobs on average instead of 50, and passing
 * every run again ran the queue 1.09 times as fast (BENCHMARKS.md).
 *
 * Only a queue limited per key alone leaves runs out, those whose key slots a
 * claim spent: passing them again could give their keys nothing (each such
 * key's new job holds the slot) and costs a read per run and per claim.
 * `spentSlots` says which. A claim reports which of the runs passed it found
 * still holding a slot (`found`, each with its key) and the key of each job it
 * claimed. It cannot say which of its jobs took a lent slot rather than a free
 * one, so, per key, as many of the key's runs count as spent as jobs the claim
 * took for that key: at least as many as it may have used, never fewer (a run
 * counted spent that was not only makes its slot wait for its outcome's
 * write). Under globalConcurrency (with perKeyConcurrency or not) and under a
 * rate limit alone, none is spent. Pure.
 */

export interface LentSlots {
  globalConcurrency: boolean;
  perKeyConcurrency: boolean;
  /** The runs passed that still held a slot: their claim tokens and concurrency keys. */
  found: ReadonlyArray<{ token: string; key: string | null }>;
  /** The concurrency key of every job the claim took. */
  claimedKeys: ReadonlyArray<string | null>;
}

/** The claim tokens of the runs the next claims need not pass again. */
export function spentSlots({ globalConcurrency, perKeyConcurrency, found, claimedKeys }: LentSlots): string[] {
  if (globalConcurrency || !perKeyConcurrency || claimedKeys.length === 0 || found.length === 0) return [];
  const taken = new Map<string, number>();
  for (const key of claimedKeys) if (key !== null) taken.set(key, (taken.get(key) ?? 0) + 1);
  const spent: string[] = [];
  for (const f of found) {
    if (f.key === null) continue;
    const left = taken.get(f.key) ?? 0;
    if (left === 0) continue;
    taken.set(f.key, left - 1);
    spent.push(f.token);
  }
  return spent;
}
