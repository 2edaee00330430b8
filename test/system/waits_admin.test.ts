/**
 * A waiting job (ctx.waitFor) in the status contract and the admin paths:
 * counted as `waiting` by stats and the gauges (never as pending, never the
 * oldest pending), listed by `--status waiting`; cancel, delete and run-now
 * apply to it (run-now: its wait times out now); `jobvisor jobs signal` sends
 * its signal, refuses a finished job with exit 1 (exit 0 with
 * --ignore-finished) and bad JSON without sending anything (the command
 * as a child process once, then in this process). The metrics count
 * steps, sleeps, waits, how waits resolved, and wake lateness. Real threads, a
 * real PostgreSQL, the real command as a child process.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cancelJobs, deleteJobs, listJobs, runJobsNow } from '../../src/queue/admin/index.ts';
import { enqueue } from '../../src/queue/enqueue.ts';
import { countActiveJobs, oldestDueByQueue } from '../../src/queue/stats.ts';
import { createMetrics } from '../../src/metrics/metrics.ts';
import { observeEvents } from '../../src/metrics/observe.ts';
import { runCli, runCliInProcess } from '../helpers/cli.ts';
import { enqueuedThen } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';
import { supervisedFile } from '../helpers/supervised.ts';

const metrics = createMetrics({ defaultMetrics: false });

const file = supervisedFile(
  'waits_admin',
  {
    queues: { default: { concurrency: 4, jobsPerThread: 4 } },
    reaper: { interval: '200ms' },
    pool: { maxThreads: 1 },
  },
  {
    beforeStart: (supervisor) => {
      observeEvents(supervisor.events, metrics);
    },
  },
);

const store = () => ({ db: file.db.pool, schema: 'jobvisor' });

const job = async (id: string) =>
  (await file.db.pool.query('SELECT status, result, waiting_for FROM jobvisor.jobs WHERE id = $1', [id])).rows[0] as
    { status: string; result: { results: unknown[] } | null; waiting_for: string | null } | undefined;

async function parked(): Promise<string> {
  const waiting = await enqueuedThen(
    file.supervisor,
    'job:waiting',
    () => enqueue(file.db.pool, 'durable', { ops: [['wait', 'approved', '1h']] }),
    60_000,
  );
  return waiting.id;
}

const finished = async (id: string) =>
  (await until(
    `job ${id} done`,
    () => job(id),
    (r) => r?.status === 'done',
    30_000,
  )) as NonNullable<Awaited<ReturnType<typeof job>>>;

describe('a waiting job in the status contract', () => {
  it('is counted as waiting by stats, listed by status, and is never the oldest pending', async () => {
    const id = await parked();
    const counts = await countActiveJobs(store());
    const mine = counts.filter((c) => c.kind === 'durable');
    assert.deepEqual(
      mine.map((c) => [c.status, c.count, c.oldest_due_s]),
      [['waiting', 1, null]],
    );
    assert.deepEqual(
      (await oldestDueByQueue(store())).filter((r) => r.queue === 'default'),
      [],
      'a waiting job is not a pending one',
    );
    const listed = await listJobs(store(), { status: 'waiting' }, { limit: 10 });
    assert.deepEqual(
      listed.jobs.map((r) => r.id),
      [id],
    );
    await cancelJobs(store(), { ids: [id] });
  });

  it('cancel and delete apply to it', async () => {
    const a = await parked();
    const b = await parked();
    assert.deepEqual((await cancelJobs(store(), { ids: [a] })).ids, [a]);
    assert.equal((await job(a))?.status, 'cancelled');
    assert.deepEqual((await deleteJobs(store(), { ids: [b] })).ids, [b]);
    assert.equal(await job(b), undefined);
  });

  it('run-now times its wait out now: the job resumes with received: false', async () => {
    const id = await parked();
    assert.deepEqual((await runJobsNow(store(), { ids: [id] })).ids, [id]);
    const row = await finished(id);
    assert.deepEqual(row.result?.results, [{ received: false }]);
  });
});

describe('jobvisor jobs signal', () => {
  it('wakes a waiting job with its JSON payload', async () => {
    const id = await parked();
    const out = await runCli(file.db.url, ['jobs', 'signal', id, 'approved', '{"by":"ann"}']);
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stdout, new RegExp(`job ${id}: signal "approved" sent; the job was waiting for it`));
    const row = await finished(id);
    assert.deepEqual(row.result?.results, [{ received: true, payload: { by: 'ann' } }]);
  });

  it('refuses a finished job (exit 1) unless --ignore-finished, and bad JSON, sending nothing', async () => {
    const { id } = await enqueue(file.db.pool, 'durable', { ops: [] });
    await finished(id);
    const refused = await runCliInProcess(file.db.url, ['jobs', 'signal', id, 'approved']);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, new RegExp(`job ${id} is done`));
    const ignored = await runCliInProcess(file.db.url, ['jobs', 'signal', id, 'approved', '--ignore-finished']);
    assert.equal(ignored.code, 0, ignored.stderr);
    assert.match(ignored.stdout, /ignored: the job is finished/);

    const waiting = await parked();
    const bad = await runCliInProcess(file.db.url, ['jobs', 'signal', waiting, 'approved', '{by: ann}']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /the payload is not JSON/);
    const signals = await file.db.pool.query('SELECT count(*)::int AS n FROM jobvisor.job_signals WHERE job_id = $1', [
      waiting,
    ]);
    assert.equal(signals.rows[0].n, 0, 'nothing was sent');
    assert.equal((await job(waiting))?.status, 'waiting');
  });
});

describe('jobvisor jobs show', () => {
  it('shows the steps (name, attempt, start, end, duration, folded result) and the current wait', async () => {
    const { id } = await enqueuedThen(
      file.supervisor,
      'job:waiting',
      () =>
        enqueue(file.db.pool, 'durable', {
          ops: [
            ['value', 'small', { a: 1 }],
            ['value', 'big', 'x'.repeat(500)],
            ['wait', 'approved', '1h'],
          ],
        }),
      60_000,
    );
    const out = await runCliInProcess(file.db.url, ['jobs', 'show', id]);
    assert.equal(out.code, 0, out.stderr);
    const time = '\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z';
    assert.match(out.stdout, new RegExp(`\\n  small  attempt 1  ${time} → ${time} \\(\\d+ ms\\)  = \\{"a": 1\\}\\n`));
    assert.match(out.stdout, new RegExp(`\\n  big  attempt 1  .*  = "x{199}…\\n`));
    assert.match(out.stdout, new RegExp(`\\n  approved  attempt 1  ${time} → -  wait, deadline ${time}\\n`));
    assert.match(out.stdout, new RegExp(`\\nwaiting for signal "approved" until ${time}\\n`));
    const json = await runCliInProcess(file.db.url, ['jobs', 'show', id, '--json']);
    const steps = (JSON.parse(json.stdout) as { steps: Array<{ name: string; kind: string }> }).steps;
    assert.deepEqual(
      steps.map((x) => [x.name, x.kind]),
      [
        ['small', 'step'],
        ['big', 'step'],
        ['approved', 'wait'],
      ],
    );
    await cancelJobs(store(), { ids: [id] });
  });
});

describe('the metrics of steps, sleeps and waits', () => {
  const value = async (name: string, labels: Record<string, string>) => {
    const metric = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === name.replace(/_count$/, ''));
    const match = metric?.values.find(
      (v) =>
        ((v as { metricName?: string }).metricName ?? metric.name) === name &&
        Object.entries(labels).every(([k, x]) => (v.labels as Record<string, unknown>)[k] === x),
    );
    return match?.value ?? 0;
  };

  it('count steps recorded, sleeps, waits, waits by signal and by timeout, and wake lateness', async () => {
    // The waits of the tests above: one woken by `jobs signal`, one timed out by run-now.
    const job = { queue: 'default', kind: 'durable' };
    assert.ok((await value('jobvisor_jobs_waited_total', job)) >= 7);
    assert.ok((await value('jobvisor_waits_resolved_total', { ...job, by: 'signal' })) >= 1);
    assert.ok((await value('jobvisor_waits_resolved_total', { ...job, by: 'timeout' })) >= 1);
    const base = {
      steps: await value('jobvisor_steps_recorded_total', job),
      slept: await value('jobvisor_jobs_slept_total', job),
      late: await value('jobvisor_wake_lateness_seconds_count', job),
    };
    assert.ok(base.late >= 1, 'the wait timed out by run-now was late by some amount');
    const { id } = await enqueue(file.db.pool, 'durable', {
      ops: [
        ['step', 'a'],
        ['sleep', 'nap', '100ms'],
        ['step', 'b'],
      ],
    });
    await finished(id);
    assert.equal((await value('jobvisor_steps_recorded_total', job)) - base.steps, 2);
    assert.equal((await value('jobvisor_jobs_slept_total', job)) - base.slept, 1);
    assert.equal((await value('jobvisor_wake_lateness_seconds_count', job)) - base.late, 1, 'the sleep');
  });
});
