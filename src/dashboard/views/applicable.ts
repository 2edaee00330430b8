/**
 * Which actions apply to a job, and the status a job is shown with: the
 * dashboard offers only what would change something (no Cancel or Run now on
 * a dead letter), from the same table of statuses the actions obey.
 */
import { ACTION_STATUSES, type BulkAction, type JobRow } from '../../queue/admin/index.ts';

export type JobAction = 'retry' | 'cancel' | 'run-now' | 'delete';

const BULK_OF: Record<JobAction, BulkAction> = {
  retry: 'retry',
  cancel: 'cancel',
  'run-now': 'runNow',
  delete: 'delete',
};

/** A pending job not yet due. `now` in ms (the dashboard's clock). Pure. */
export function isScheduled(job: Pick<JobRow, 'status' | 'run_at'>, now = Date.now()): boolean {
  if (job.status !== 'pending') return false;
  if (job.run_at === 'infinity') return true;
  return job.run_at instanceof Date && job.run_at.getTime() > now;
}

/** The status a page shows: "scheduled" for a pending job not yet due, else the column's. Pure. */
export function shownStatus(job: Pick<JobRow, 'status' | 'run_at'>, now = Date.now()): string {
  return isScheduled(job, now) ? 'scheduled' : job.status;
}

/**
 * Whether `action` would change this job (Run now: a job not yet due, a sleeping
 * one included, or a waiting one, whose wait then times out). Pure.
 */
export function applies(action: JobAction, job: Pick<JobRow, 'status' | 'run_at'>, now = Date.now()): boolean {
  if (action === 'run-now') return isScheduled(job, now) || job.status === 'waiting';
  return (ACTION_STATUSES[BULK_OF[action]] as readonly string[]).includes(job.status);
}

/** Whether a bulk action can change any job shown under a status filter ('' = any status). Pure. */
export function bulkApplies(action: 'retry' | 'cancel' | 'delete', statusFilter: string | undefined): boolean {
  if (!statusFilter) return true;
  const status = statusFilter === 'scheduled' ? 'pending' : statusFilter;
  return (ACTION_STATUSES[action] as readonly string[]).includes(status);
}
