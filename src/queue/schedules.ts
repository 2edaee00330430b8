/**
 * The runtime statement of the `schedules` table (migration 024): when each
 * schedule definition (name, cron, timezone) was first seen by a supervisor.
 * The scheduler never enqueues a fire time before it (supervisor/loops/scheduler.ts).
 */
import { planned, run, type Now, type Store } from './sql.ts';

/** What decides a schedule's fire times; a null timezone is UTC. */
export interface ScheduleDefinition {
  name: string;
  cron: string;
  timezone: string | null;
}

// One upsert of every configured schedule, once per supervisor start. DO UPDATE
// (setting the column to itself) rather than DO NOTHING: it returns the row
// that is there, also one another supervisor inserted a moment ago (DO NOTHING
// returns nothing for it, and this statement's snapshot cannot see it). A tiny
// table read by its primary key.
const SEE_SCHEDULES = planned(
  'see_schedules',
  `
INSERT INTO jobvisor.schedules AS s (name, cron, timezone, first_seen_at)
SELECT name, cron, timezone, coalesce($4::timestamptz, now())
  FROM unnest($1::text[], $2::text[], $3::text[]) AS g(name, cron, timezone)
ON CONFLICT (name, cron, timezone) DO UPDATE SET first_seen_at = s.first_seen_at
RETURNING s.name, s.first_seen_at`,
);

/**
 * Records `schedules` as seen at `now` (the database's clock when null), keeping
 * the first sighting of those seen before. Returns each one's first sighting by name.
 */
export async function seeSchedules(
  store: Store,
  schedules: readonly ScheduleDefinition[],
  now: Now,
): Promise<Map<string, Date>> {
  if (schedules.length === 0) return new Map();
  const rows = await run<{ name: string; first_seen_at: Date }>(store, SEE_SCHEDULES, [
    schedules.map((s) => s.name),
    schedules.map((s) => s.cron),
    schedules.map((s) => s.timezone ?? ''),
    now,
  ]);
  return new Map(rows.map((r) => [r.name, r.first_seen_at]));
}
