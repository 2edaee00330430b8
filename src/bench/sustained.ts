/**
 * Scenario "sustained": one supervisor at full speed for a while (default
 * 10 minutes) while a producer keeps a backlog, with done rows kept (no
 * cleanup). Reports throughput per tenth of the run, the loss from the first
 * tenth to the last (dead tuples, index bloat), the same loss between the
 * medians of the first and the last three tenths (less at the mercy of one noisy
 * window), the supervisor's memory after every tenth, and the table's tuples and
 * size at the end.
 */
import { enqueueMany } from '../queue/enqueue.ts';
import type { BenchDatabase } from './database.ts';
import { inProcessSupervisor, noopJobs, type QueueShape } from './harness.ts';
import { WARM_UP } from './process.ts';
import { median } from './stats.ts';

export async function sustained(db: BenchDatabase, durationMs: number, shape: QueueShape) {
  const { supervisor, completions } = inProcessSupervisor(db.url, shape);
  await supervisor.start();
  const warm = completions(WARM_UP);
  await enqueueMany(db.pool, noopJobs(WARM_UP));
  await warm;
  let completed = 0;
  supervisor.events.on('job:completed', ({ jobs }) => (completed += jobs.length));
  const windows: number[] = [];
  const rss: number[] = [];
  const windowMs = durationMs / 10;
  let enqueued = 0;
  const batch = 5000;
  const started = performance.now();
  let windowStart = started;
  let windowCompleted = 0;
  try {
    while (performance.now() - started < durationMs) {
      // Keep 2–4 batches of backlog so the supervisor never starves.
      if (enqueued - completed < 2 * batch) {
        await enqueueMany(db.pool, noopJobs(batch));
        enqueued += batch;
      } else {
        await new Promise((r) => setTimeout(r, 5));
      }
      const now = performance.now();
      if (now - windowStart >= windowMs) {
        windows.push(((completed - windowCompleted) * 1000) / (now - windowStart));
        rss.push(process.memoryUsage().rss);
        windowStart = now;
        windowCompleted = completed;
      }
    }
  } finally {
    await supervisor.stop();
  }
  const { rows } = await db.pool.query<
    Record<string, number>
  >(`SELECT n_dead_tup::int AS dead, n_live_tup::int AS live, autovacuum_count::int AS autovacuums,
            pg_relation_size(relid) / 1048576 AS "heapMb", pg_indexes_size(relid) / 1048576 AS "indexesMb"
       FROM pg_stat_user_tables WHERE relname = 'jobs'`);
  const loss = (a: number, b: number) => (a > 0 ? ((a - b) / a) * 100 : 0);
  const mb = (bytes: number) => Math.round(bytes / 1048576);
  return {
    completed,
    windows: windows.map(Math.round),
    lossPercent: loss(windows[0] ?? 0, windows[windows.length - 1] ?? 0),
    lossOfMediansPercent: loss(median(windows.slice(0, 3)), median(windows.slice(-3))),
    rssStartMb: mb(rss[0] ?? 0),
    rssEndMb: mb(rss[rss.length - 1] ?? 0),
    rssMb: rss.map(mb),
    table: rows[0],
  };
}
