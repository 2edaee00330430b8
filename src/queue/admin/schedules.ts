/**
 * The Schedules page: each configured cron schedule's next fire times and the
 * job its last fire enqueued. The scheduler gives every fire's job the unique
 * key `schedule:<name>:<fire time ISO>`, so the last fire's job is the newest
 * job of the schedule's kind with that key prefix (gone once cleanup deleted it).
 */
import { parseCron } from '../../config/cron.ts';
import type { Schedule } from '../../config/index.ts';
import { planned, run, type Store } from '../sql.ts';
import { JOB_COLUMNS, jobRow } from './list.ts';
import type { JobRow } from './types.ts';

/** One configured schedule as scheduleSummaries() reports it: its next fire times and the job of its last fire. */
export interface ScheduleSummary {
  name: string;
  cron: string;
  kind: string;
  queue: string;
  timezone: string | null;
  next: Date[];
  lastJob: JobRow | null;
}

// starts_with, not a range or LIKE on unique_key: under a non-C collation a
// range compares punctuation loosely, and a name may hold LIKE wildcards.
// The (kind, unique_key) index narrows the scan to the schedule's kind.
const LAST_FIRE = planned(
  'admin_last_fire',
  `
SELECT ${JOB_COLUMNS}
  FROM jobvisor.jobs
 WHERE kind = $1 AND unique_key IS NOT NULL AND starts_with(unique_key, $2)
 ORDER BY run_at DESC, id DESC
 LIMIT 1`,
);

/** The next `count` fire times of `schedule` after `now`. */
export function nextFireTimes(schedule: Pick<Schedule, 'cron' | 'timezone'>, now: Date, count: number): Date[] {
  const it = parseCron(schedule.cron, {
    currentDate: now,
    ...(schedule.timezone ? { tz: schedule.timezone } : {}),
  });
  const times: Date[] = [];
  for (let i = 0; i < count; i++) times.push(it.next().toDate());
  return times;
}

/**
 * Each schedule's next `count` fire times after `now` and the job its last
 * fire enqueued (null when there is none, or cleanup deleted it). Reads one
 * statement per schedule.
 *
 * @param store The database and schema: `{ db: pool, schema: 'jobvisor' }`.
 * @param schedules The configured schedules (`settings.schedules`).
 * @throws Error from cron-parser when a schedule's cron expression is invalid
 *   (loadConfig and run() refuse those first), and the database's errors.
 */
export async function scheduleSummaries(
  store: Store,
  schedules: Schedule[],
  now: Date = new Date(),
  count = 3,
): Promise<ScheduleSummary[]> {
  const summaries: ScheduleSummary[] = [];
  // One statement at a time: the store may be a single client.
  for (const s of schedules) {
    const [last] = await run<JobRow>(store, LAST_FIRE, [s.kind, `schedule:${s.name}:`]);
    summaries.push({
      name: s.name,
      cron: s.cron,
      kind: s.kind,
      queue: s.queue,
      timezone: s.timezone,
      next: nextFireTimes(s, now, count),
      lastJob: last ? jobRow(last) : null,
    });
  }
  return summaries;
}
