/**
 * Every attempt of a job, from what the row keeps: each failed attempt's entry
 * in `errors` (its end, error and stack; its start and owner since migration
 * 014), and the latest attempt's start, end and owner from started_at,
 * finished_at and locked_by. Starts and owners of entries written before 014,
 * or by the reaper, are unknown (null); the history keeps the newest 20 entries.
 */
import { time, type Attempt, type JobDetail, type Time } from './types.ts';

function at(text: string | undefined): Time | null {
  if (text === undefined) return null;
  const d = new Date(text);
  return Number.isNaN(d.getTime()) ? null : d;
}

function duration(started: Time | null, ended: Time | null): number | null {
  return started instanceof Date && ended instanceof Date ? ended.getTime() - started.getTime() : null;
}

/** The attempts of `job`, oldest first. Pure. */
export function attemptsOf(job: Omit<JobDetail, 'timeline'>): Attempt[] {
  const out: Attempt[] = [];
  for (const e of job.errors) {
    if (e.snooze) continue;
    const started = at(e.started);
    const ended = at(e.at);
    out.push({
      attempt: e.attempt,
      started,
      ended,
      durationMs: duration(started, ended),
      owner: e.owner ?? null,
      outcome: 'failed',
      error: e.error ?? null,
      stack: typeof e.stack === 'string' && e.stack !== '' ? e.stack : null,
    });
  }
  if (job.attempts === 0 || job.started_at === null) return out;
  const last = out[out.length - 1];
  const started = time(job.started_at);
  if (last && last.attempt === job.attempts && job.status !== 'running') {
    // The latest attempt failed: the row's start and owner are that attempt's.
    last.started ??= started;
    last.owner ??= job.locked_by;
    last.durationMs = duration(last.started, last.ended);
    return out;
  }
  const ended = job.status === 'running' || job.status === 'pending' ? null : time(job.finished_at);
  out.push({
    attempt: job.attempts,
    started,
    ended,
    durationMs: duration(started, ended),
    owner: job.locked_by,
    // pending here: the attempt was handed back (shutdown, pause) and will run again.
    outcome: job.status === 'pending' ? 'handed back' : job.status,
    error: job.status === 'failed' ? job.last_error : null,
    stack: null,
  });
  return out;
}
