/**
 * Recurring jobs. Every supervisor checks the `schedules` from config each
 * `scheduler.interval` and enqueues one job per fire time that has passed, with
 * unique key `schedule:<name>:<fire time>`: however many replicas run, the
 * unique index lets exactly one insert win (ON CONFLICT DO NOTHING).
 *
 * On start, fire times missed while nothing ran are enqueued if they are younger
 * than `scheduler.catchUp`, and never those before the schedule was first seen:
 * the first round records each schedule (name, cron, timezone) in the
 * `schedules` table, keeping an earlier first sighting (queue/schedules.ts).
 * Without it a new `*\/5 * * * * *` schedule enqueued 720 jobs at its first
 * start, the hour before it existed. The job's run_at is its fire time, so its
 * wait metric shows how late it started.
 *
 * One clock, the process's (`now`), gives the fire times and the first
 * sightings this supervisor records, so no fire time slips before a sighting
 * by the difference between this clock and the database's.
 */
import { parseCron } from '../../config/cron.ts';
import type { Schedule, Settings } from '../../config/index.ts';
import { enqueueMany, type JobSpec } from '../../queue/enqueue.ts';
import { seeSchedules } from '../../queue/schedules.ts';
import type { Store } from '../../queue/sql.ts';
import type { SupervisorEvents } from '../events.ts';
import type { Hooks } from '../hooks.ts';
import { Loop, reportedAs } from './loop.ts';

/** Fire times of `schedule` in (from, to]. */
export function fireTimes(schedule: Schedule, from: Date, to: Date): Date[] {
  if (to <= from) return [];
  const it = parseCron(schedule.cron, {
    currentDate: from,
    endDate: to,
    ...(schedule.timezone ? { tz: schedule.timezone } : {}),
  });
  const times: Date[] = [];
  while (it.hasNext() && times.length < 10_000) times.push(it.next().toDate());
  return times;
}

export function uniqueKeyFor(schedule: Schedule, fireTime: Date): string {
  return `schedule:${schedule.name}:${fireTime.toISOString()}`;
}

export function createScheduler(options: {
  store: Store;
  schedules: Schedule[];
  settings: Settings['scheduler'];
  maxAttempts: number;
  events: SupervisorEvents;
  /** Told of failed rounds (none: a loop built alone, in a test). */
  hooks?: Hooks;
  /** The clock (default: the process's). */
  now?: () => Date;
}): Loop {
  const clock = options.now ?? (() => new Date());
  let firstSeen: Map<string, Date> | undefined;
  let checkedUntil: Date | undefined;
  return new Loop({
    name: 'scheduler',
    intervalMs: options.settings.interval,
    run: async () => {
      if (options.schedules.length === 0) return;
      const now = clock();
      firstSeen ??= await seeSchedules(options.store, options.schedules, now);
      const from = checkedUntil ?? new Date(now.getTime() - options.settings.catchUp);
      const due: Array<{ schedule: Schedule; fireTime: Date }> = [];
      for (const schedule of options.schedules) {
        const seen = firstSeen.get(schedule.name) ?? now;
        for (const fireTime of fireTimes(schedule, seen > from ? seen : from, now)) due.push({ schedule, fireTime });
      }
      if (due.length > 0) {
        const specs: JobSpec[] = due.map(({ schedule, fireTime }) => ({
          kind: schedule.kind,
          payload: schedule.payload,
          queue: schedule.queue,
          priority: schedule.priority,
          runAt: fireTime,
          maxAttempts: options.maxAttempts,
          uniqueKey: uniqueKeyFor(schedule, fireTime),
        }));
        const results = await enqueueMany(options.store.db, specs, { schema: options.store.schema });
        results.forEach((r, i) => {
          const d = due[i] as (typeof due)[number];
          options.events.emit('schedule:fired', {
            name: d.schedule.name,
            kind: d.schedule.kind,
            queue: d.schedule.queue,
            fireTime: d.fireTime,
            jobId: r.id,
            duplicate: r.duplicate,
          });
        });
      }
      checkedUntil = now;
    },
    ...reportedAs(options.events, 'scheduler', options.hooks),
  });
}
