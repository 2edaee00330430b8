/**
 * Gauges read from the database: jobs by queue, kind and status, and the age of
 * the oldest due pending job. Read lazily when /metrics is scraped and at most
 * once per `refreshMs`, so many scrapes (or many replicas scraped at once) do
 * not turn into a query storm. A failed or late read keeps the last values and
 * sets `jobvisor_database_gauges_up` to 0; the scrape is not held up by it.
 *
 * Queue and kind labels go through a bounded label set: rows of unknown kinds
 * (or queues) are summed under `other`.
 */
import { countActiveJobs, type JobCount } from '../queue/stats.ts';
import type { Store } from '../queue/sql.ts';
import { UNBOUNDED_LABELS, type LabelSet } from './labels.ts';
import type { Metrics } from './metrics.ts';

/** Sums rows per bounded (queue, kind, status); the oldest due age per bounded queue. Pure. */
export function boundRows(rows: JobCount[], labels: LabelSet) {
  const counts = new Map<string, { queue: string; kind: string; status: string; count: number }>();
  const oldest = new Map<string, number>();
  for (const r of rows) {
    const queue = labels.queue(r.queue);
    const kind = labels.kind(r.kind);
    const key = `${queue}\u0000${kind}\u0000${r.status}`;
    const c = counts.get(key);
    if (c) c.count += r.count;
    else counts.set(key, { queue, kind, status: r.status, count: r.count });
    if (r.oldest_due_s !== null) oldest.set(queue, Math.max(oldest.get(queue) ?? 0, r.oldest_due_s));
  }
  return { counts: [...counts.values()], oldest };
}

export function createDatabaseGauges(
  store: Store,
  metrics: Metrics,
  refreshMs: number,
  labels: LabelSet = UNBOUNDED_LABELS,
) {
  let readAt = 0;
  let reading: Promise<void> | undefined;

  async function read(): Promise<void> {
    const { counts, oldest } = boundRows(await countActiveJobs(store), labels);
    metrics.jobs.reset();
    metrics.oldestPending.reset();
    for (const c of counts) metrics.jobs.labels(c.queue, c.kind, c.status).set(c.count);
    for (const [queue, age] of oldest) metrics.oldestPending.labels(queue).set(age);
  }

  return {
    /**
     * Refreshes if the values are older than refreshMs, waiting at most
     * `deadlineMs` for the read (which goes on in the background). Never throws.
     */
    async refresh(deadlineMs = Infinity): Promise<void> {
      if (Date.now() - readAt < refreshMs) return;
      reading ??= read()
        .then(() => {
          readAt = Date.now();
          metrics.databaseGaugesUp.set(1);
        })
        .catch(() => {
          readAt = Date.now() - refreshMs / 2;
          metrics.databaseGaugesUp.set(0);
        })
        .finally(() => (reading = undefined));
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<boolean>((resolve) => {
        if (Number.isFinite(deadlineMs)) timer = setTimeout(() => resolve(true), deadlineMs);
      });
      try {
        if (await Promise.race([reading.then(() => false), late])) metrics.databaseGaugesUp.set(0);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
