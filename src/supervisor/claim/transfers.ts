/**
 * Slots handed on: a limited queue's slot frees when the job's outcome is
 * written, but the supervisor knows sooner that the task has ended. Its next
 * claim passes those runs (ended, outcome not yet written) and may give their
 * slots to new jobs at once (migration 031, claim_limited_sql.ts). Each such
 * run may lend its slot once: which ones a claim spent is decided here, and
 * the strategy never passes a spent run again. Pure.
 *
 * A claim reports which of the runs passed it found still holding a slot
 * (`found`, each with its key) and the key of each job it claimed. It cannot
 * say which of its jobs took a lent slot rather than a free one, so this
 * counts as spent at least as many as it may have used, never fewer (a run
 * counted spent that was not only makes its slot wait for its outcome's write):
 *   - perKeyConcurrency: per key, as many of the key's runs as jobs the claim
 *     took for that key;
 *   - globalConcurrency: as many of all the runs as jobs it took;
 *   - both: every run it found, if it took anything (a run's slot counts for
 *     its key and for the queue at once);
 *   - neither (a rate limit only): none (nothing counts slots).
 */

export interface LentSlots {
  globalConcurrency: boolean;
  perKeyConcurrency: boolean;
  /** The runs passed that still held a slot: their claim tokens and concurrency keys. */
  found: ReadonlyArray<{ token: string; key: string | null }>;
  /** The concurrency key of every job the claim took. */
  claimedKeys: ReadonlyArray<string | null>;
}

/** The claim tokens of the runs whose slots the claim may have spent. */
export function spentSlots({ globalConcurrency, perKeyConcurrency, found, claimedKeys }: LentSlots): string[] {
  if (claimedKeys.length === 0 || found.length === 0) return [];
  if (globalConcurrency && perKeyConcurrency) return found.map((f) => f.token);
  if (globalConcurrency) return found.slice(0, claimedKeys.length).map((f) => f.token);
  if (!perKeyConcurrency) return [];
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
