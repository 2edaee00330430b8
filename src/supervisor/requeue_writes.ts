/**
 * The completer's writes of runs that put their job back or end it unfinished,
 * and the events each emits after its write (never before, through safeEmit):
 *   failed  (queue/complete.ts failJobs) → 'job:retried' or 'job:dead';
 *   snoozed (queue/snooze.ts)            → 'job:snoozed', or 'job:dead' past
 *                                          jobs.maxSnoozes;
 * and 'job:fenced' for claims this supervisor no longer held. Each takes rows
 * [lo, hi) of a batch and throws what its write throws (split_write.ts decides).
 */
import { failJobs } from '../queue/complete.ts';
import { snoozeJobs } from '../queue/snooze.ts';
import type { Store } from '../queue/sql.ts';
import type { ClaimedJob } from '../queue/types.ts';
import type { JobRef, SupervisorEvents } from './events.ts';
import type { OutcomeBatch } from './outcome_batch.ts';
import { safeEmit } from './safe_emit.ts';

export interface RequeueWriteContext {
  store: Store;
  owner: string;
  maxSnoozes: number;
  events: SupervisorEvents;
  /** The completer's claims awaiting their write: a written (or fenced) one leaves. */
  held: Map<string, ClaimedJob>;
}

/** Writes the failed runs [lo, hi) of `b` in one statement: each a retry or a dead letter. */
export async function writeFailed(c: RequeueWriteContext, b: OutcomeBatch, lo: number, hi: number): Promise<void> {
  const jobs = b.failedJobs.slice(lo, hi);
  const errors = b.errors.slice(lo, hi);
  const stacks = b.stacks.slice(lo, hi);
  const rows = await failJobs(c.store, c.owner, {
    ids: jobs.map((j) => j.id),
    tokens: jobs.map((j) => j.token),
    permanent: b.permanent.slice(lo, hi),
    delaysMs: b.delays.slice(lo, hi),
    errors,
    stacks,
  });
  const status = new Map(rows.map((r) => [r.id, r.status]));
  const retried = {
    jobs: [] as JobRef[],
    runMs: [] as number[],
    errors: [] as string[],
    stacks: [] as Array<string | null>,
  };
  const dead = {
    jobs: [] as JobRef[],
    runMs: [] as number[],
    errors: [] as string[],
    stacks: [] as Array<string | null>,
  };
  const fenced: JobRef[] = [];
  jobs.forEach((j, i) => {
    c.held.delete(j.token);
    const s = status.get(j.id);
    const into = s === 'pending' ? retried : s === 'failed' ? dead : undefined;
    if (!into) {
      fenced.push(j);
      return;
    }
    into.jobs.push(j);
    into.runMs.push(b.failedMs[lo + i] as number);
    into.errors.push(errors[i] as string);
    into.stacks.push(stacks[i] ?? null);
  });
  if (retried.jobs.length) safeEmit(c.events, 'job:retried', retried);
  if (dead.jobs.length) safeEmit(c.events, 'job:dead', dead);
  if (fenced.length) safeEmit(c.events, 'job:fenced', { jobs: fenced });
}

/** Writes the snoozed runs [lo, hi) of `b` in one statement: each back to pending, or dead past the cap. */
export async function writeSnoozed(c: RequeueWriteContext, b: OutcomeBatch, lo: number, hi: number): Promise<void> {
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
