/**
 * Scenario "sustained": one supervisor at full speed for a while (default
 * 10 minutes) while a producer keeps a backlog, with done rows kept (no
 * cleanup). Reports throughput per tenth of the run, the loss from the first
 * tenth to the last (dead tuples, index bloat), the supervisor's memory, and
 * the table's dead tuples at the end.
 */
import { enqueueMany } from '../queue/enqueue.ts';
import type { BenchDatabase } from './database.ts';
import { inProcessSupervisor, noopJobs, type QueueShape } from './harness.ts';

export async function sustained(db: BenchDatabase, durationMs: number, shape: QueueShape) {
  const { supervisor, completions } = inProcessSupervisor(db.url, shape);
  await supervisor.start();
  const warm = completions(200);
  await enqueueMany(db.pool, noopJobs(200));
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
  const { rows } = await db.pool.query("SELECT n_dead_tup::int AS dead, n_live_tup::int AS live, autovacuum_count::int AS autovacuums FROM pg_stat_user_tables WHERE relname = 'jobs'");
  const first = windows[0] ?? 0;
  const last = windows[windows.length - 1] ?? 0;
  return {
    completed,
    windows: windows.map(Math.round),
    lossPercent: first > 0 ? ((first - last) / first) * 100 : 0,
    rssStartMb: Math.round((rss[0] ?? 0) / 1048576),
    rssEndMb: Math.round((rss[rss.length - 1] ?? 0) / 1048576),
    table: rows[0],
  };
}
