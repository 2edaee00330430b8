/**
 * Gauges read from the database: jobs by queue, kind and status, and the age of
 * the oldest due pending job. Read lazily when /metrics is scraped and at most
 * once per `refreshMs`, so many scrapes (or many replicas scraped at once) do
 * not turn into a query storm. A failed read keeps the last values.
 */
import { countActiveJobs } from '../queue/stats.ts';
import type { Store } from '../queue/sql.ts';
import type { Metrics } from './metrics.ts';

export function createDatabaseGauges(store: Store, metrics: Metrics, refreshMs: number) {
  let readAt = 0;
  let reading: Promise<void> | undefined;

  async function read(): Promise<void> {
    const rows = await countActiveJobs(store);
    metrics.jobs.reset();
    metrics.oldestPending.reset();
    const oldest = new Map<string, number>();
    for (const r of rows) {
      metrics.jobs.labels(r.queue, r.kind, r.status).set(r.count);
      if (r.oldest_due_s !== null) oldest.set(r.queue, Math.max(oldest.get(r.queue) ?? 0, r.oldest_due_s));
    }
    for (const [queue, age] of oldest) metrics.oldestPending.labels(queue).set(age);
  }

  return {
    /** Refreshes if the values are older than refreshMs; never throws. */
    async refresh(): Promise<void> {
      if (Date.now() - readAt < refreshMs) return;
      reading ??= read()
        .then(() => void (readAt = Date.now()))
        .catch(() => void (readAt = Date.now() - refreshMs / 2))
        .finally(() => (reading = undefined));
      await reading;
    },
  };
}
