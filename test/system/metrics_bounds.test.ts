/**
 * Bounded metrics (issue 15 item 10, issue 11 §4): label values come from the
 * configured queues and known task kinds, everything else is `other`; each
 * gauge has one writer; loop health is a pure decision over error streaks.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { boundCounts, boundOldest, createDatabaseGauges } from '../../src/metrics/database_gauges.ts';
import { createLabelSet, OTHER, taskKindsIn, UNBOUNDED_LABELS } from '../../src/metrics/labels.ts';
import { createMetrics } from '../../src/metrics/metrics.ts';
import { observeEvents } from '../../src/metrics/observe.ts';
import { SupervisorEvents } from '../../src/supervisor/events.ts';
import { Loop } from '../../src/supervisor/loops/loop.ts';
import { isOutageError } from '../../src/errors.ts';
import { failingLoops, LoopHealth } from '../../src/metrics/loop_health.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { spawnSupervisor } from '../helpers/supervisor.ts';

let tmp: string;
let db: TestDatabase;
before(async () => {
  tmp = mkdtempSync(path.join(tmpdir(), 'jobvisor-labels-'));
  db = await createTestDatabase('metrics_bounds');
});
after(async () => {
  rmSync(tmp, { recursive: true, force: true });
  await db.drop();
});

describe('label sets', () => {
  it('knows task files, scheduled kinds and configured queues; the rest is other', () => {
    const dir = path.join(tmp, 'tasks');
    mkdirSync(dir);
    for (const f of ['resize.js', 'report.mjs', 'mail.ts', 'types.d.ts', 'README.md', 'bad name.js'])
      writeFileSync(path.join(dir, f), '');
    mkdirSync(path.join(dir, 'support'));
    assert.deepEqual(taskKindsIn(dir).sort(), ['mail', 'report', 'resize']);
    assert.deepEqual(taskKindsIn(path.join(tmp, 'missing')), []);
    const labels = createLabelSet({ queues: ['default', 'cpu'], kinds: ['nightly'], taskDirs: [dir, ''] });
    assert.equal(labels.kind('resize'), 'resize');
    assert.equal(labels.kind('nightly'), 'nightly');
    assert.equal(labels.kind('types'), OTHER);
    assert.equal(labels.kind('k4711'), OTHER);
    assert.equal(labels.queue('cpu'), 'cpu');
    assert.equal(labels.queue('__proto__'), OTHER);
  });

  it('relists the folders so a task deployed later gets its own label', () => {
    const dir = path.join(tmp, 'later');
    mkdirSync(dir);
    let now = 0;
    const labels = createLabelSet({ queues: [], taskDirs: [dir], now: () => now });
    assert.equal(labels.kind('fresh'), OTHER);
    writeFileSync(path.join(dir, 'fresh.js'), '');
    assert.equal(labels.kind('fresh'), OTHER, 'listed at most every 30 s');
    now += 31_000;
    assert.equal(labels.kind('fresh'), 'fresh');
  });

  it('database rows of unknown kinds and queues are summed under other', () => {
    const labels = createLabelSet({ queues: ['default'], kinds: ['a'] });
    const rows = [
      { queue: 'default', kind: 'a', status: 'pending', count: 2, oldest_due_s: 5 },
      { queue: 'default', kind: 'x1', status: 'pending', count: 3, oldest_due_s: 9 },
      { queue: 'default', kind: 'x2', status: 'pending', count: 4, oldest_due_s: null },
      { queue: 'q9', kind: 'x3', status: 'failed', count: 1, oldest_due_s: null },
    ];
    assert.deepEqual(boundCounts(rows, labels), [
      { queue: 'default', kind: 'a', status: 'pending', count: 2 },
      { queue: 'default', kind: 'other', status: 'pending', count: 7 },
      { queue: 'other', kind: 'other', status: 'failed', count: 1 },
    ]);
    const ages = [
      { queue: 'default', oldest_due_s: 5 },
      { queue: 'q8', oldest_due_s: 7 },
      { queue: 'q9', oldest_due_s: 3 },
    ];
    assert.deepEqual(
      [...boundOldest(ages, labels)],
      [
        ['default', 5],
        ['other', 7],
      ],
    );
  });
});

describe('gauge writers', () => {
  it('pool:changed writes only the pool queue length; threads are read at scrape time', async () => {
    const events = new SupervisorEvents();
    const metrics = createMetrics({ defaultMetrics: false });
    observeEvents(events, metrics);
    events.emit('pool:changed', { threads: 7, busy: 3, queued: 2 });
    const value = async (name: string) =>
      (await metrics.registry.getSingleMetric(name)?.get())?.values.map((v) => v.value) ?? [];
    assert.deepEqual(await value('jobvisor_pool_queue_length'), [2]);
    assert.deepEqual(await value('jobvisor_pool_threads'), [0]);
    assert.deepEqual(await value('jobvisor_pool_threads_busy'), [0]);
  });

  it('schedule fires are counted under a name that says so', async () => {
    const events = new SupervisorEvents();
    const metrics = createMetrics({ defaultMetrics: false });
    observeEvents(events, metrics);
    const fire = { name: 's', kind: 'k', queue: 'default', fireTime: new Date(), jobId: '1' };
    events.emit('schedule:fired', { ...fire, duplicate: false });
    events.emit('schedule:fired', { ...fire, duplicate: true });
    const text = await metrics.registry.metrics();
    assert.match(text, /^jobvisor_schedule_fires_total\{queue="default",kind="k"\} 1$/m);
    assert.doesNotMatch(text, /jobvisor_jobs_enqueued_total/);
  });
});

describe('loop health', () => {
  const opts = { leaseMs: 15_000, quietMs: 10_000 };
  it('a streak longer than the lease and not quiet is failing', () => {
    const streaks = new Map([
      ['reaper', { since: 0, last: 20_000, announced: false, outage: false }],
      ['cleanup', { since: 10_000, last: 20_000, announced: false, outage: false }],
      ['heartbeat', { since: 0, last: 1000, announced: false, outage: false }],
    ]);
    assert.deepEqual(failingLoops(streaks, 21_000, opts), [{ loop: 'reaper', failingMs: 21_000 }]);
    assert.deepEqual(failingLoops(streaks, 80_000, opts), []);
  });

  it('emits loop:failed once and loop:recovered on a sign of success', () => {
    const events = new SupervisorEvents();
    let now = 0;
    const health = new LoopHealth(events, { leaseMs: 15_000, now: () => now });
    const seen: string[] = [];
    events.on('loop:failed', ({ loop }) => seen.push(`failed ${loop}`));
    events.on('loop:recovered', ({ loop }) => seen.push(`recovered ${loop}`));
    for (; now <= 20_000; now += 5000) {
      events.emit('db:error', { loop: 'fetcher:default', err: new Error('x') });
      health.check();
    }
    assert.deepEqual(health.failing(), [{ loop: 'fetcher:default', failingMs: 25_000 }]);
    events.emit('job:claimed', { queue: 'default', count: 1 });
    assert.deepEqual(health.failing(), []);
    assert.deepEqual(seen, ['failed fetcher:default', 'recovered fetcher:default']);
  });

  it('failed progress writes (best effort) never make a loop failing; a snooze write is a completer success', () => {
    const events = new SupervisorEvents();
    let now = 0;
    const health = new LoopHealth(events, { leaseMs: 1000, now: () => now });
    for (; now <= 5000; now += 1000) {
      events.emit('db:error', { loop: 'progress', err: new Error('x') });
      events.emit('db:error', { loop: 'completer', err: new Error('x') });
      health.check();
    }
    assert.deepEqual(
      health.failing().map((f) => f.loop),
      ['completer'],
    );
    events.emit('job:snoozed', { jobs: [], runMs: [], delaysMs: [] });
    assert.deepEqual(health.failing(), []);
  });

  it('the database answering again ends streaks of outage errors, not of other failures', () => {
    const events = new SupervisorEvents();
    let now = 0;
    const health = new LoopHealth(events, { leaseMs: 1000, now: () => now });
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const badRow = Object.assign(new Error('cannot append to a non-array'), { code: '22023' });
    const deadlock = Object.assign(new Error('deadlock detected'), { code: '40P01' });
    assert.equal(isOutageError(refused), true);
    assert.equal(isOutageError(new Error('Connection terminated unexpectedly')), true);
    assert.equal(isOutageError(badRow), false);
    assert.equal(isOutageError(deadlock), false);
    for (; now <= 5000; now += 1000) {
      events.emit('db:error', { loop: 'heartbeat', err: refused });
      events.emit('db:error', { loop: 'reaper', err: badRow });
      events.emit('db:error', { loop: 'cleanup', err: deadlock });
    }
    assert.deepEqual(
      health.failing().map((f) => f.loop),
      ['heartbeat', 'reaper', 'cleanup'],
    );
    health.databaseAnswered(now - 2000); // an answer older than the last error explains nothing
    assert.equal(health.failing().length, 3);
    health.databaseAnswered(now);
    assert.deepEqual(
      health.failing().map((f) => f.loop),
      ['reaper', 'cleanup'],
    );
  });

  it("a periodic loop's round that succeeds after failures ends its streak, whatever the errors were", async () => {
    // The heartbeat renews leases and says nothing else when it works: before db:recovered a
    // streak of lock or deadlock errors (an operator's LOCK TABLE) held /readyz at 503 until
    // 75 s without an error, long after the heartbeat renewed again.
    const events = new SupervisorEvents();
    let now = 0;
    const health = new LoopHealth(events, { leaseMs: 1000, now: () => now });
    const seen: string[] = [];
    events.on('loop:recovered', ({ loop }) => seen.push(loop));
    const lockTimeout = Object.assign(new Error('canceling statement due to lock timeout'), { code: '55P03' });
    let failing = true;
    const heartbeat = new Loop({
      name: 'heartbeat',
      intervalMs: 1000,
      run: () => (failing ? Promise.reject(lockTimeout) : Promise.resolve()),
      onError: (err) => events.emit('db:error', { loop: 'heartbeat', err }),
      onRecovered: () => events.emit('db:recovered', { loop: 'heartbeat' }),
    });
    for (; now <= 3000; now += 1000) await heartbeat.runOnce();
    health.check();
    health.databaseAnswered(now); // the database answering says nothing about a lock timeout
    assert.deepEqual(
      health.failing().map((f) => f.loop),
      ['heartbeat'],
    );
    failing = false;
    await heartbeat.runOnce();
    assert.deepEqual(health.failing(), []);
    assert.deepEqual(seen, ['heartbeat']);
    await heartbeat.runOnce(); // only the first success after failures says so
    assert.deepEqual(seen, ['heartbeat']);
  });

  it('a streak that goes quiet ends', () => {
    const events = new SupervisorEvents();
    let now = 0;
    const health = new LoopHealth(events, { leaseMs: 1000, quietMs: 5000, now: () => now });
    const seen: string[] = [];
    events.on('loop:recovered', ({ loop }) => seen.push(loop));
    events.emit('db:error', { loop: 'heartbeat', err: null });
    now = 2000;
    events.emit('db:error', { loop: 'heartbeat', err: null });
    health.check();
    now = 8000;
    health.check();
    assert.deepEqual(seen, ['heartbeat']);
  });
});

describe('database gauges', () => {
  after(async () => {
    await db.pool.query('TRUNCATE jobvisor.jobs');
  });

  /** Each series of a gauge as its labels (sorted keys, joined) and value. */
  async function series(metrics: ReturnType<typeof createMetrics>, name: string) {
    const values = (await metrics.registry.getSingleMetric(name)?.get())?.values ?? [];
    return new Map(values.map((v) => [Object.values(v.labels).join('/'), v.value]));
  }

  it('re-read the oldest due age on every refresh, and the counts only as often as their spacing allows', async () => {
    const store = { db: db.pool, schema: 'jobvisor' };
    await db.pool.query(
      `INSERT INTO jobvisor.jobs (kind, run_at) SELECT 'k', now() - interval '1 minute' FROM generate_series(1, 3)`,
    );
    const metrics = createMetrics({ defaultMetrics: false });
    // refresh 0: every refresh is due; a spacing this large never lets the counts be read twice.
    const gauges = createDatabaseGauges(store, metrics, 0, UNBOUNDED_LABELS, { countSpacing: 1e9 });
    await gauges.refresh();
    assert.equal((await series(metrics, 'jobvisor_jobs')).get('default/k/pending'), 3);
    assert.ok(((await series(metrics, 'jobvisor_oldest_pending_seconds')).get('default') ?? 0) >= 60);

    await db.pool.query(
      `INSERT INTO jobvisor.jobs (kind, queue, run_at) VALUES ('k', 'q2', now() - interval '1 hour')`,
    );
    await gauges.refresh();
    const ages = await series(metrics, 'jobvisor_oldest_pending_seconds');
    assert.ok((ages.get('q2') ?? 0) >= 3600, `the age is re-read: ${JSON.stringify([...ages])}`);
    const counts = await series(metrics, 'jobvisor_jobs');
    assert.deepEqual([...counts], [['default/k/pending', 3]], 'the counts wait for their spacing');
    assert.deepEqual([...(await series(metrics, 'jobvisor_database_gauges_up'))], [['', 1]]);

    const every = createMetrics({ defaultMetrics: false });
    await createDatabaseGauges(store, every, 0, UNBOUNDED_LABELS, { countSpacing: 0 }).refresh();
    assert.equal((await series(every, 'jobvisor_jobs')).get('q2/k/pending'), 1);
  });
});

describe('cardinality with a real supervisor', () => {
  it('5,000 distinct kinds inserted by SQL and run keep the series count bounded', async () => {
    await db.pool.query(
      `INSERT INTO jobvisor.jobs (kind, queue, payload, max_attempts)
       SELECT 'k' || i, CASE WHEN i % 2 = 0 THEN 'default' ELSE 'q' || i END, '{}', 1 FROM generate_series(1, 5000) i`,
    );
    const sup = await spawnSupervisor({
      databaseUrl: db.url,
      config: { queues: { default: { concurrency: 50, jobsPerThread: 50, prefetch: 50 } } },
    });
    try {
      const deadline = Date.now() + 120_000;
      while (
        (await db.pool.query(`SELECT 1 FROM jobvisor.jobs WHERE queue = 'default' AND status <> 'failed' LIMIT 1`))
          .rowCount
      ) {
        if (Date.now() > deadline) throw new Error('the default queue did not run out');
        await new Promise((r) => setTimeout(r, 200));
      }
      const body = await new Promise<string>((resolve, reject) => {
        request({ host: '127.0.0.1', port: sup.metricsPort, path: '/metrics', agent: false }, (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve(text));
        })
          .on('error', reject)
          .end();
      });
      const series = body.split('\n').filter((l) => l.startsWith('jobvisor_'));
      const jobSeries = series.filter((l) => /^jobvisor_(jobs|job_|oldest)/.test(l));
      process.stdout.write(`# 5,000 kinds: ${series.length} series, ${body.length} bytes per scrape\n`);
      assert.doesNotMatch(body, /kind="k\d+"/);
      assert.doesNotMatch(body, /queue="q\d+"/);
      assert.match(body, /^jobvisor_jobs_dead_lettered_total\{queue="default",kind="other"\} 2500$/m);
      assert.match(body, /^jobvisor_jobs\{queue="other",kind="other",status="pending"\} 2500$/m);
      assert.ok(jobSeries.length < 200, `${jobSeries.length} job series`);
    } finally {
      await sup.stop();
    }
  });
});
