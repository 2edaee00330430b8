/** One job with everything the table knows about it: `jobs show` and the Job page. */
import { planned, run, type Store } from '../sql.ts';
import { checkIds } from './filter.ts';
import { JOB_COLUMNS, jobRow } from './list.ts';
import { time, type JobDetail, type TimelineEvent, type Time } from './types.ts';

const GET_JOB = planned(
  'admin_get_job',
  `
SELECT ${JOB_COLUMNS}, errors, locked_until, lease_token::text AS lease_token, trace_context
  FROM jobvisor.jobs
 WHERE id = $1`,
);

/**
 * The job with this id, or null when there is none.
 * @throws InputError when `id` is not a positive integer.
 */
export async function getJob(store: Store, id: string): Promise<JobDetail | null> {
  const [checked] = checkIds([id]);
  const [row] = await run<Omit<JobDetail, 'timeline'>>(store, GET_JOB, [checked]);
  if (!row) return null;
  const job = jobRow(row);
  job.locked_until = time(job.locked_until);
  if (!Array.isArray(job.errors)) job.errors = [];
  return { ...job, timeline: timeline(job) };
}

/**
 * A job's history, oldest first, from what the row keeps: its creation, each
 * failed attempt (the `errors` history holds the newest 20), the start of the
 * latest attempt, and its end. Earlier attempts' starts are not stored.
 */
export function timeline(job: Omit<JobDetail, 'timeline'>): TimelineEvent[] {
  const events: TimelineEvent[] = [{ at: job.created_at, event: 'created' }];
  for (const e of job.errors) {
    const at = new Date(e.at);
    events.push({
      at: Number.isNaN(at.getTime()) ? job.created_at : at,
      event: e.snooze ? 'snoozed' : 'failed',
      attempt: e.attempt,
      ...(e.snooze ? { error: `snoozed until ${e.until ?? '?'}` } : { error: e.error ?? '' }),
      ...(!e.snooze && typeof e.stack === 'string' && e.stack !== '' ? { stack: e.stack } : {}),
    });
  }
  if (job.started_at !== null) events.push({ at: job.started_at, event: 'started', attempt: job.attempts });
  if (job.finished_at !== null)
    events.push({
      at: job.finished_at,
      event: 'finished',
      ...(job.status === 'failed' && job.last_error !== null ? { error: job.last_error } : {}),
    });
  return events
    .map((e, i) => ({ e, i }))
    .sort((a, b) => millis(a.e.at) - millis(b.e.at) || a.i - b.i)
    .map(({ e }) => e);
}

function millis(t: Time): number {
  if (t === 'infinity') return Number.POSITIVE_INFINITY;
  if (t === '-infinity') return Number.NEGATIVE_INFINITY;
  return t.getTime();
}
