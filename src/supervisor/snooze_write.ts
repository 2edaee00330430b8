/**
 * The completer's write of snoozed runs (queue/snooze.ts), and the events it
 * emits after: 'job:snoozed' for jobs back to pending, 'job:dead' for those
 * past jobs.maxSnoozes, 'job:fenced' for claims this supervisor no longer held.
 */
import { snoozeJobs } from '../queue/snooze.ts';
import type { Store } from '../queue/sql.ts';
import type { ClaimedJob } from '../queue/types.ts';
import type { JobRef, SupervisorEvents } from './events.ts';
import type { OutcomeBatch } from './outcome_batch.ts';
import { safeEmit } from './safe_emit.ts';

export interface SnoozeWriteContext {
  store: Store;
  owner: string;
  maxSnoozes: number;
  events: SupervisorEvents;
  /** The completer's claims awaiting their write: a written (or fenced) one leaves. */
  held: Map<string, ClaimedJob>;
}

/** Writes the snoozed runs [lo, hi) of `b` in one statement; throws what the write throws. */
export async function writeSnoozed(c: SnoozeWriteContext, b: OutcomeBatch, lo: number, hi: number): Promise<void> {
  const jobs = b.snoozedJobs.slice(lo, hi);
  const delaysMs = b.snoozeDelays.slice(lo, hi);
  const rows = await snoozeJobs(
    c.store,
    c.owner,
    { ids: jobs.map((j) => j.id), tokens: jobs.map((j) => j.token), delaysMs },
    c.maxSnoozes,
  );
  const written = new Map(rows.map((r) => [r.id, r]));
  const snoozed = { jobs: [] as JobRef[], runMs: [] as number[], delaysMs: [] as number[] };
  const dead = { jobs: [] as JobRef[], runMs: [] as number[], errors: [] as string[] };
  const fenced: JobRef[] = [];
  jobs.forEach((j, i) => {
    c.held.delete(j.token);
    const row = written.get(j.id);
    const runMs = b.snoozedMs[lo + i] as number;
    if (row?.status === 'pending') {
      snoozed.jobs.push(j);
      snoozed.runMs.push(runMs);
      snoozed.delaysMs.push(delaysMs[i] as number);
    } else if (row?.status === 'failed') {
      dead.jobs.push(j);
      dead.runMs.push(runMs);
      dead.errors.push(row.error ?? 'TooManySnoozes');
    } else fenced.push(j);
  });
  if (snoozed.jobs.length) safeEmit(c.events, 'job:snoozed', snoozed);
  if (dead.jobs.length) safeEmit(c.events, 'job:dead', dead);
  if (fenced.length) safeEmit(c.events, 'job:fenced', { jobs: fenced });
}
