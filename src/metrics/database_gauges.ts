/**
 * Gauges read from the database: jobs by queue, kind and status, and the age of
 * the oldest due pending job. Read lazily when /metrics is scraped, so many
 * scrapes (or many replicas scraped at once) do not turn into a query storm. A
 * failed or late read keeps the last values and sets
 * `jobvisor_database_gauges_up` to 0; the scrape is not held up by it.
 *
 * Two reads, each at most once per `refreshMs`:
 *   - the age of each queue's oldest due job, which JobvisorOldestPendingTooOld
 *     pages on, costs one index probe per (queue, priority) present, whatever
 *     the backlog;
 *   - the counts read an index entry per pending, running, failed and blocked row: 1.1–2.0 s
 *     at 2 million pending. So they are re-read no sooner than COSTLY_READ_SPACING (20)
 *     times their last read's duration after it ended. Read on every scrape, a
 *     backlog made each replica spend a growing share of a database core on
 *     counting it, and the database that had to work the backlog off was the
 *     one paying.
 *
 * Queue and kind labels go through a bounded label set: rows of unknown kinds
 * (or queues) are summed under `other`.
 */
import { cached, costlyReadGap, COSTLY_READ_SPACING } from '../cached.ts';
import { countActiveJobs, oldestDueByQueue, type JobCount } from '../queue/stats.ts';
import type { Store } from '../queue/sql.ts';
import { UNBOUNDED_LABELS, type LabelSet } from './labels.ts';
import type { Metrics } from './metrics.ts';

/** Sums rows per bounded (queue, kind, status). Pure. */
export function boundCounts(rows: JobCount[], labels: LabelSet) {
  const counts = new Map<string, { queue: string; kind: string; status: string; count: number }>();
  for (const r of rows) {
    const queue = labels.queue(r.queue);
    const kind = labels.kind(r.kind);
    const key = `${queue}\u0000${kind}\u0000${r.status}`;
    const c = counts.get(key);
    if (c) c.count += r.count;
    else counts.set(key, { queue, kind, status: r.status, count: r.count });
  }
  return [...counts.values()];
}

/** The oldest due age per bounded queue (the largest of the queues summed under `other`). Pure. */
export function boundOldest(rows: Array<{ queue: string; oldest_due_s: number | null }>, labels: LabelSet) {
  const oldest = new Map<string, number>();
  for (const r of rows) {
    if (r.oldest_due_s === null) continue;
    const queue = labels.queue(r.queue);
    oldest.set(queue, Math.max(oldest.get(queue) ?? 0, r.oldest_due_s));
  }
  return oldest;
}

export function createDatabaseGauges(
  store: Store,
  metrics: Metrics,
  refreshMs: number,
  labels: LabelSet = UNBOUNDED_LABELS,
  { countSpacing = COSTLY_READ_SPACING }: { countSpacing?: number } = {},
) {
  // A failed read is tried again after half a refresh; until then the gauges keep their values.
  const retryMs = refreshMs / 2;
  const ages = cached(
    refreshMs,
    async () => {
      const oldest = boundOldest(await oldestDueByQueue(store), labels);
      metrics.oldestPending.reset();
      for (const [queue, age] of oldest) metrics.oldestPending.labels(queue).set(age);
    },
    { retryMs },
  );
  const counts = cached(
    (lastReadMs) => costlyReadGap(lastReadMs, refreshMs, countSpacing),
    async () => {
      const rows = boundCounts(await countActiveJobs(store), labels);
      metrics.jobs.reset();
      for (const c of rows) metrics.jobs.labels(c.queue, c.kind, c.status).set(c.count);
    },
    { retryMs },
  );

  return {
    /**
     * Starts the reads whose values are due, waiting at most `deadlineMs` for
     * them (they go on in the background, and set the up gauge when they end).
     * Never throws.
     */
    async refresh(deadlineMs = Infinity): Promise<void> {
      const all = Promise.all([ages(), counts()]).then(
        () => metrics.databaseGaugesUp.set(1),
        () => metrics.databaseGaugesUp.set(0),
      );
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<boolean>((resolve) => {
        if (Number.isFinite(deadlineMs)) timer = setTimeout(() => resolve(true), deadlineMs);
      });
      try {
        if (await Promise.race([all.then(() => false), late])) metrics.databaseGaugesUp.set(0);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
