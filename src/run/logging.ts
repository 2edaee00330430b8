/**
 * Log lines for supervisor events: constant messages, data in fields, errors
 * under `err`. Events, not idle polls: an empty claim logs nothing; per-job
 * lines are debug level so a busy supervisor does not log per job by default.
 */
import { isPoolEnded } from '../db/pool_ended.ts';
import { isReadOnlyDbError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { SupervisorEvents } from '../supervisor/events.ts';

/** too_many_connections / configuration_limit_exceeded: no connection slot left for this role or server. */
function isOutOfConnections(err: unknown): boolean {
  const code = (err as { code?: string } | undefined)?.code;
  return code === '53300' || code === '53400';
}

export function logEvents(events: SupervisorEvents, log: Logger): void {
  // The logger already binds the supervisor id.
  events.on('supervisor:started', ({ queues }) => log.info({ queues }, 'supervisor started'));
  events.on('supervisor:draining', ({ reason }) => log.info({ reason }, 'supervisor draining'));
  events.on('supervisor:stopped', () => log.info('supervisor stopped'));
  events.on('job:completed', ({ jobs, runMs }) => {
    if (log.isLevelEnabled('debug'))
      jobs.forEach((j, i) =>
        log.debug({ jobId: j.id, kind: j.kind, queue: j.queue, attempt: j.attempt, runMs: runMs[i] }, 'job completed'),
      );
  });
  // A failed attempt is a warning even when it will be retried: it is the line
  // that says why a job is late. Its stack frames come with it, when recorded.
  events.on('job:retried', ({ jobs, errors, stacks }) => {
    jobs.forEach((j, i) =>
      log.warn(
        { jobId: j.id, kind: j.kind, queue: j.queue, attempt: j.attempt, error: errors[i], ...stackField(stacks, i) },
        'job failed, retry scheduled',
      ),
    );
  });
  events.on('job:dead', ({ jobs, errors, stacks }) => {
    jobs.forEach((j, i) =>
      log.warn(
        { jobId: j.id, kind: j.kind, queue: j.queue, attempt: j.attempt, error: errors[i], ...stackField(stacks, i) },
        'job dead-lettered',
      ),
    );
  });
  events.on('job:snoozed', ({ jobs, delaysMs }) => {
    if (log.isLevelEnabled('debug'))
      jobs.forEach((j, i) =>
        log.debug(
          { jobId: j.id, kind: j.kind, queue: j.queue, attempt: j.attempt, delayMs: delaysMs[i] },
          'job snoozed',
        ),
      );
  });
  events.on('job:released', ({ jobs, reason }) =>
    log.info({ jobIds: jobs.map((j) => j.id), reason }, 'jobs handed back'),
  );
  events.on('job:fenced', ({ jobs }) =>
    log.warn({ jobIds: jobs.map((j) => j.id) }, 'outcome not written: this supervisor no longer owns the attempt'),
  );
  events.on('job:timeout', ({ job, timeoutMs }) =>
    log.warn({ jobId: job.id, kind: job.kind, timeoutMs }, 'job timed out, aborting'),
  );
  events.on('lease:lost', ({ jobs }) => log.warn({ jobIds: jobs.map((j) => j.id) }, 'lease lost, job stopped'));
  events.on('lease:reaped', ({ jobs }) =>
    log.warn({ jobs: jobs.map((j) => ({ id: j.id, status: j.status, owner: j.locked_by })) }, 'expired leases reaped'),
  );
  events.on('jobs:cleaned', ({ rows }) =>
    log.info({ deleted: rows.reduce((n, r) => n + r.count, 0) }, 'old jobs cleaned up'),
  );
  events.on('thread:died', ({ jobs, error }) =>
    log.error({ jobIds: jobs.map((j) => j.id), error }, 'worker thread died'),
  );
  events.on('schedule:fired', (e) => {
    if (!e.duplicate) log.info({ schedule: e.name, fireTime: e.fireTime, jobId: e.jobId }, 'schedule fired');
  });
  events.on('listener:connected', ({ reconnect }) =>
    reconnect ? log.info('listener reconnected') : log.debug('listening for new jobs'),
  );
  events.on('queue:paused', ({ queue }) => log.info({ queue }, 'queue paused: claiming nothing from it'));
  // A read-only server is said once per episode (database:read-only), not per failed round.
  events.on('listener:lost', ({ error, readOnly }) => {
    if (!readOnly) log.warn({ error }, 'listener connection lost, reconnecting');
  });
  // A server out of connection slots is said once, until work goes through again.
  let refused = false;
  const workDone = () => (refused = false);
  events.on('job:claimed', workDone);
  events.on('job:completed', workDone);
  events.on('db:error', ({ loop, err }) => {
    // A read-only server is said once (database:read-only); a pool its owner ended, by the runner (runner.ts).
    if (isReadOnlyDbError(err) || isPoolEnded(err)) return;
    if (isOutOfConnections(err)) {
      if (!refused)
        log.error(
          { loop, err },
          'database refuses new connections (max_connections reached): working with the connections already open',
        );
      refused = true;
      return;
    }
    log.warn({ loop, err }, 'database error');
  });
  events.on('database:read-only', ({ loop, error }) =>
    log.error(
      { loop, error },
      'database server is read-only (a standby or a demoted primary): dropping its connections, waiting for a writable primary',
    ),
  );
  events.on('database:writable', ({ unwritableMs, readOnly, failover, address }) => {
    if (readOnly || failover) log.info({ unwritableMs, failover, address }, 'writable primary reached');
  });
  events.on('tasks:deferred', ({ held }) =>
    log.debug({ held }, "busy: every task's options are read at the first quiet moment"),
  );
}

function stackField(stacks: Array<string | null> | undefined, i: number): { stack?: string } {
  const stack = stacks?.[i];
  return typeof stack === 'string' ? { stack } : {};
}
