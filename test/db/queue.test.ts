/**
 * The queue's SQL, driven step by step with a pinned clock: claims, fencing,
 * retries and dead letters, hand-backs, leases, the reaper and cleanup.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { cancelJobs, retryJobs, statusOf } from '../../src/queue/admin/index.ts';
import { claimJobs, nextDueIn } from '../../src/queue/claim.ts';
import { deleteOldJobs } from '../../src/queue/cleanup.ts';
import { completeJobs as completeIds, failJobs as failArrays, releaseJobs } from '../../src/queue/complete.ts';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { pauseQueue, resumeQueue } from '../../src/queue/pause.ts';
import { renewLeases } from '../../src/queue/lease.ts';
import { reapExpiredLeases } from '../../src/queue/reaper.ts';
import type { Store } from '../../src/queue/sql.ts';
import { countActiveJobs, oldestDueByQueue } from '../../src/queue/stats.ts';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { pagesRead } from '../helpers/explain.ts';
import { until } from '../helpers/poll.ts';

let db: TestDatabase;
let store: Store;
const T0 = new Date('2030-06-01T12:00:00Z');
const at = (ms: number) => new Date(T0.getTime() + ms);

before(async () => {
  db = await createTestDatabase('queue');
  store = { db: db.pool, schema: 'jobvisor' };
});
beforeEach(async () => {
  await db.pool.query('TRUNCATE jobvisor.jobs');
});
after(async () => {
  await db.drop();
});

async function add(n: number, extra: Record<string, unknown> = {}) {
  return (
    await enqueueMany(
      db.pool,
      Array.from({ length: n }, (_, i) => ({ kind: 'k', payload: { i }, runAt: T0, ...extra })),
    )
  ).map((r) => r.id);
}
/** Completes claims; returns the ids actually written. */
async function completeJobs(s: Store, owner: string, jobs: Array<{ id: string; token: string }>, now?: Date) {
  const fenced = await completeIds(
    s,
    owner,
    jobs.map((j) => j.id),
    jobs.map((j) => j.token),
    now,
  );
  return jobs.map((j) => j.id).filter((id) => !fenced.has(id));
}

function failJobs(
  s: Store,
  owner: string,
  f: Array<{ id: string; token: string; error: string; permanent: boolean; delayMs: number }>,
  now?: Date,
) {
  return failArrays(
    s,
    owner,
    {
      ids: f.map((x) => x.id),
      tokens: f.map((x) => x.token),
      errors: f.map((x) => x.error),
      permanent: f.map((x) => x.permanent),
      delaysMs: f.map((x) => x.delayMs),
    },
    now,
  );
}

const row = async (id: string) => (await db.pool.query('SELECT * FROM jobvisor.jobs WHERE id = $1', [id])).rows[0];

describe('claims', () => {
  it('claim due jobs in priority, then run_at order, up to the limit, and lease them', async () => {
    const [late] = await add(1, { runAt: at(5000) });
    const [low] = await add(1, { priority: 5 });
    const [high] = await add(1, { priority: -5 });
    const jobs = await claimJobs(store, { owner: 'A', queue: 'default', limit: 10, leaseMs: 30_000, now: at(1000) });
    assert.deepEqual(
      jobs.map((j) => j.id),
      [high, low],
      'the future job is not due',
    );
    const r = await row(high as string);
    assert.equal(r.status, 'running');
    assert.equal(r.attempts, 1);
    assert.equal(r.locked_by, 'A');
    assert.equal(r.locked_until.getTime(), at(31_000).getTime());
    assert.equal(jobs[0]?.payload, '{"i": 0}');
    assert.equal((await row(late as string)).status, 'pending');
    assert.equal(await nextDueIn(store, 'default', at(1000)), 4000);
  });

  it('two claimers never get the same job (SKIP LOCKED)', async () => {
    await add(400);
    const claims = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        claimJobs(store, { owner: `S${i}`, queue: 'default', limit: 60, leaseMs: 30_000, now: at(0) }),
      ),
    );
    const ids = claims.flat().map((j) => j.id);
    assert.equal(new Set(ids).size, ids.length, 'no job claimed twice');
    assert.equal(ids.length, 400);
  });

  it('claims only its queue', async () => {
    await add(2, { queue: 'other' });
    assert.equal(
      (await claimJobs(store, { owner: 'A', queue: 'default', limit: 10, leaseMs: 1000, now: at(0) })).length,
      0,
    );
    assert.equal(
      (await claimJobs(store, { owner: 'A', queue: 'other', limit: 10, leaseMs: 1000, now: at(0) })).length,
      2,
    );
  });
});

describe('claims across priorities', () => {
  it('take due jobs highest priority first, past delayed ones of a higher priority, the limit across priorities', async () => {
    const delayed = await add(3, { priority: -10, runAt: at(60_000) });
    const [a1, a2] = await add(2, { priority: 3 });
    const [b1, b2] = await add(2, { priority: -1 });
    const [c1] = await add(1, { priority: 7 });
    const claim = (limit: number) =>
      claimJobs(store, { owner: 'A', queue: 'default', limit, leaseMs: 30_000, now: at(1000) });
    assert.deepEqual(
      (await claim(3)).map((j) => j.id),
      [b1, b2, a1],
    );
    assert.deepEqual(
      (await claim(10)).map((j) => j.id),
      [a2, c1],
    );
    assert.deepEqual(await claim(10), [], 'only the delayed jobs are left');
    for (const id of delayed) assert.equal((await row(id)).status, 'pending');
  });

  it('read no index entries of jobs that are not due, whatever their priority', async () => {
    // 100,000 jobs delayed to tomorrow at a higher priority than the two due ones.
    // A scan in (priority, run_at, id) order stepped over every one of them on
    // every claim (about 660 pages read); one probe per priority reads about a hundred.
    await db.pool.query(
      `INSERT INTO jobvisor.jobs (kind, priority, run_at)
       SELECT 'k', -1, $1::timestamptz + interval '1 day' FROM generate_series(1, 100000)`,
      [T0],
    );
    const claim = (s: Store) =>
      claimJobs(s, { owner: 'A', queue: 'default', limit: 10, leaseMs: 30_000, now: at(1000) });
    const due: string[] = [];
    const {
      value: jobs,
      pages,
      plan,
    } = await pagesRead(
      db.url,
      async (s) => {
        // A first claim finds nothing due; it also lets the connection load and plan what it needs.
        assert.deepEqual(await claim(s), []);
        due.push(...(await add(2)));
      },
      claim,
    );
    assert.deepEqual(
      jobs.map((j) => j.id),
      due,
    );
    assert.ok(pages < 200, `the claim read ${pages} pages:\n${plan}`);
  });
});

describe('storage', () => {
  // Neither the claim nor the outcome can be a HOT update (status is in the
  // partial indexes' predicates), so each writes a new version of the row.
  // Pages filled to 85 % had room for few of them: the claim's went to new
  // pages (330 of 2,000 stayed) and the table grew 2.75 times (migration 011).
  //
  // An outcome's version stays only where the claim's dead versions can be
  // pruned, so no session may hold a snapshot from before the claims: not an
  // autoanalyze of the table (autovacuum is off for the test), and not a long
  // statement of another test's database either, since PostgreSQL bounds the
  // pruning horizon by every database's oldest snapshot until it looks closer.
  // Both cost this test every done version once (0 of 2,000 stayed).
  const claimsPrunable = () =>
    until(
      'no session holding a snapshot from before the claims',
      async () =>
        Number(
          (
            await db.pool.query(
              `SELECT count(*) AS n FROM pg_stat_activity
                WHERE pid <> pg_backend_pid() AND backend_xmin IS NOT NULL
                  AND age(backend_xmin) >= (SELECT min(age(xmin)) FROM jobvisor.jobs WHERE status = 'running')`,
            )
          ).rows[0].n,
        ),
      (n) => n === 0,
    );
  before(() => db.pool.query('ALTER TABLE jobvisor.jobs SET (autovacuum_enabled = off)'));
  after(() => db.pool.query('ALTER TABLE jobvisor.jobs RESET (autovacuum_enabled)'));

  it('claims and outcomes write most new row versions beside the rows they replace', async () => {
    await db.pool.query(
      `INSERT INTO jobvisor.jobs (kind, payload) SELECT 'k', jsonb_build_object('i', i) FROM generate_series(1, 2000) i`,
    );
    const pages = async () =>
      Number((await db.pool.query(`SELECT pg_relation_size('jobvisor.jobs') / 8192 AS n`)).rows[0].n);
    const blocks = async () =>
      new Map<string, number>(
        (await db.pool.query(`SELECT id::text, (ctid::text::point)[0]::int AS b FROM jobvisor.jobs`)).rows.map(
          (r: { id: string; b: number }) => [r.id, r.b],
        ),
      );
    const inserted = await blocks();
    const before = await pages();
    const stayed = (now: Map<string, number>) => [...now].filter(([id, b]) => inserted.get(id) === b).length;

    const claimed = [];
    for (
      let batch;
      (batch = await claimJobs(store, { owner: 'A', queue: 'default', limit: 500, leaseMs: 60_000 })).length;
    )
      claimed.push(...batch);
    assert.equal(claimed.length, 2000);
    const afterClaims = stayed(await blocks());
    assert.ok(afterClaims >= 1400, `${afterClaims} of 2,000 claimed versions stayed on their page`);
    await claimsPrunable();

    for (let i = 0; i < claimed.length; i += 500) await completeJobs(store, 'A', claimed.slice(i, i + 500));
    const afterOutcomes = stayed(await blocks());
    assert.ok(afterOutcomes >= 1400, `${afterOutcomes} of 2,000 done versions stayed on their page`);
    const grown = (await pages()) / before;
    assert.ok(grown < 1.5, `the table grew ${grown.toFixed(2)} times (${before} pages before)`);
  });
});

describe('fenced outcomes', () => {
  it('completes only for the owner of the current claim', async () => {
    await add(1);
    const [job] = await claimJobs(store, { owner: 'A', queue: 'default', limit: 1, leaseMs: 1000, now: at(0) });
    const attempt = { id: job!.id, token: job!.token };
    assert.deepEqual(await completeJobs(store, 'B', [attempt], at(10)), [], 'another owner is fenced off');
    assert.deepEqual(
      await completeJobs(store, 'A', [{ ...attempt, token: String(BigInt(job!.token) + 1n) }], at(10)),
      [],
      'another claim is fenced off',
    );
    assert.deepEqual(await completeJobs(store, 'A', [attempt], at(10)), [job!.id]);
    const r = await row(job!.id);
    assert.equal(r.status, 'done');
    assert.equal(r.finished_at.getTime(), at(10).getTime());
    assert.deepEqual(await completeJobs(store, 'A', [attempt], at(20)), [], 'a second write changes nothing');
  });

  it('a reaped job cannot be completed by its stale owner, even after it is claimed again', async () => {
    await add(1);
    const [job] = await claimJobs(store, { owner: 'A', queue: 'default', limit: 1, leaseMs: 1000, now: at(0) });
    const reaped = await reapExpiredLeases(store, 100, at(5000));
    assert.deepEqual(
      reaped.map((r) => [r.id, r.status, r.locked_by]),
      [[job!.id, 'pending', 'A']],
    );
    const [again] = await claimJobs(store, { owner: 'A', queue: 'default', limit: 1, leaseMs: 1000, now: at(6000) });
    assert.equal(again!.attempt, 2);
    assert.deepEqual(
      await completeJobs(store, 'A', [{ id: job!.id, token: job!.token }], at(6100)),
      [],
      'the old claim is fenced off',
    );
    assert.deepEqual(
      await failJobs(
        store,
        'A',
        [{ id: job!.id, token: job!.token, error: 'late', permanent: false, delayMs: 0 }],
        at(6100),
      ),
      [],
    );
    assert.deepEqual(await completeJobs(store, 'A', [{ id: job!.id, token: again!.token }], at(6200)), [job!.id]);
    const r = await row(job!.id);
    assert.match(r.errors[0].error, /lease expired: supervisor A/);
  });

  it('retries with the given delay, then dead-letters when attempts are used up; keeps an error history', async () => {
    const [id] = await add(1, { maxAttempts: 2 });
    const [first] = await claimJobs(store, { owner: 'A', queue: 'default', limit: 1, leaseMs: 1000, now: at(0) });
    assert.ok(first);
    assert.deepEqual(
      await failJobs(
        store,
        'A',
        [{ id: id!, token: first.token, error: 'E1', permanent: false, delayMs: 1500 }],
        at(100),
      ),
      [{ id, status: 'pending' }],
    );
    let r = await row(id!);
    assert.equal(r.run_at.getTime(), at(1600).getTime());
    assert.equal(r.last_error, 'E1');
    assert.equal(
      (await claimJobs(store, { owner: 'A', queue: 'default', limit: 1, leaseMs: 1000, now: at(1000) })).length,
      0,
      'not due yet',
    );
    const [job] = await claimJobs(store, { owner: 'A', queue: 'default', limit: 1, leaseMs: 1000, now: at(1600) });
    assert.equal(job!.attempt, 2);
    assert.deepEqual(
      await failJobs(store, 'A', [{ id: id!, token: job!.token, error: 'E2', permanent: false, delayMs: 1 }], at(1700)),
      [{ id, status: 'failed' }],
    );
    r = await row(id!);
    assert.equal(r.status, 'failed');
    assert.equal(r.finished_at.getTime(), at(1700).getTime());
    assert.deepEqual(
      r.errors.map((e: { attempt: number; error: string }) => [e.attempt, e.error]),
      [
        [1, 'E1'],
        [2, 'E2'],
      ],
    );
  });

  it('dead-letters a permanent failure at once', async () => {
    const [id] = await add(1, { maxAttempts: 10 });
    const [job] = await claimJobs(store, { owner: 'A', queue: 'default', limit: 1, leaseMs: 1000, now: at(0) });
    assert.deepEqual(
      await failJobs(
        store,
        'A',
        [{ id: id!, token: job!.token, error: 'bad input', permanent: true, delayMs: 0 }],
        at(1),
      ),
      [{ id, status: 'failed' }],
    );
  });

  it('hands a job back without using up its attempt', async () => {
    const [id] = await add(1);
    const [job] = await claimJobs(store, { owner: 'A', queue: 'default', limit: 1, leaseMs: 1000, now: at(0) });
    assert.deepEqual(await releaseJobs(store, 'A', [{ id: id!, token: job!.token }]), [id]);
    const r = await row(id!);
    assert.equal(r.status, 'pending');
    assert.equal(r.attempts, 0);
    assert.equal(r.locked_until, null);
  });
});

describe('leases', () => {
  it('renews only leases this owner still holds', async () => {
    const ids = await add(3);
    const claims = await claimJobs(store, { owner: 'A', queue: 'default', limit: 3, leaseMs: 1000, now: at(0) });
    const byId = new Map(claims.map((c) => [c.id, c.token]));
    const fences = ids.map((id) => ({ id, token: byId.get(id)! }));
    await cancelJobs(store, { ids: [ids[2] as string] });
    const kept = await renewLeases(store, 'A', fences, 10_000, at(500));
    assert.deepEqual(
      [...kept].sort(),
      fences
        .slice(0, 2)
        .map((f) => f.token)
        .sort(),
    );
    assert.equal((await row(ids[0] as string)).locked_until.getTime(), at(10_500).getTime());
    assert.equal((await renewLeases(store, 'B', fences, 10_000, at(500))).size, 0);
  });

  it('the reaper returns expired leases to pending, or to failed when no attempts remain', async () => {
    const [a] = await add(1, { maxAttempts: 3 });
    const [b] = await add(1, { maxAttempts: 1 });
    await claimJobs(store, { owner: 'A', queue: 'default', limit: 2, leaseMs: 1000, now: at(0) });
    assert.equal((await reapExpiredLeases(store, 100, at(999))).length, 0, 'not expired yet');
    const reaped = await reapExpiredLeases(store, 100, at(2000));
    assert.deepEqual(
      new Map(reaped.map((r) => [r.id, r.status])),
      new Map([
        [a, 'pending'],
        [b, 'failed'],
      ]),
    );
    assert.equal((await row(a!)).run_at.getTime(), at(2000).getTime(), 'due again at once');
  });
});

describe('cleanup and stats', () => {
  it('deletes finished jobs past their retention, failed ones after the longer retention, in batches', async () => {
    const ids = await add(6);
    const claims = await claimJobs(store, { owner: 'A', queue: 'default', limit: 6, leaseMs: 1000, now: at(0) });
    const token = new Map(claims.map((c) => [c.id, c.token]));
    await completeJobs(
      store,
      'A',
      ids.slice(0, 3).map((id) => ({ id, token: token.get(id)! })),
      at(0),
    );
    await failJobs(
      store,
      'A',
      [{ id: ids[3]!, token: token.get(ids[3]!)!, error: 'x', permanent: true, delayMs: 0 }],
      at(0),
    );
    await cancelJobs(store, { ids: [ids[4]!] });
    await db.pool.query('UPDATE jobvisor.jobs SET finished_at = $2 WHERE id = $1', [ids[4], at(0)]);
    const day = 86_400_000;
    const round1 = await deleteOldJobs(store, {
      retentionMs: 3 * day,
      failedRetentionMs: 30 * day,
      limit: 2,
      now: at(4 * day),
    });
    assert.equal(
      round1.reduce((n, r) => n + r.count, 0),
      2,
      'batch size respected',
    );
    const round2 = await deleteOldJobs(store, {
      retentionMs: 3 * day,
      failedRetentionMs: 30 * day,
      limit: 100,
      now: at(4 * day),
    });
    assert.equal(
      round2.reduce((n, r) => n + r.count, 0),
      2,
    );
    const left = (await db.pool.query('SELECT id, status FROM jobvisor.jobs ORDER BY id')).rows;
    assert.deepEqual(left.map((r) => r.status).sort(), ['failed', 'running']);
    const round3 = await deleteOldJobs(store, {
      retentionMs: 3 * day,
      failedRetentionMs: 30 * day,
      limit: 100,
      now: at(31 * day),
    });
    assert.deepEqual(
      round3.map((r) => [r.status, r.count]),
      [['failed', 1]],
    );
  });

  it('counts active jobs and the oldest due pending age', async () => {
    await add(3);
    await add(1, { kind: 'other', queue: 'q2', runAt: at(-60_000) });
    const counts = await countActiveJobs(store, at(1000));
    const pendingDefault = counts.find((c) => c.queue === 'default' && c.status === 'pending');
    assert.equal(pendingDefault?.count, 3);
    assert.equal(pendingDefault?.oldest_due_s, 1);
    assert.equal(counts.find((c) => c.queue === 'q2')?.oldest_due_s, 61);
  });

  it('reads the oldest due age of each queue from the head of each priority, as the counts report it', async () => {
    await add(2, { runAt: at(-10_000) });
    // Older, behind a higher priority: the age is the queue's, not the first priority's.
    await add(1, { priority: 5, runAt: at(-100_000) });
    await add(1, { queue: 'later', runAt: at(60_000) });
    await add(1, { queue: 'q3', runAt: at(60_000) });
    await add(1, { queue: 'q3', priority: 1, runAt: at(-5_000) });
    await db.pool.query(`INSERT INTO jobvisor.jobs (kind, queue, run_at) VALUES ('k', 'ancient', '-infinity')`);
    const ages = await oldestDueByQueue(store, at(1000));
    const counted = new Map<string, number>();
    for (const c of await countActiveJobs(store, at(1000)))
      if (c.oldest_due_s !== null) counted.set(c.queue, Math.max(counted.get(c.queue) ?? 0, c.oldest_due_s));
    assert.deepEqual(
      ages.map((a) => [a.queue, a.oldest_due_s]),
      [...counted].sort(),
    );
    assert.deepEqual(
      ages.filter((a) => a.queue !== 'ancient').map((a) => [a.queue, a.oldest_due_s]),
      [
        ['default', 101],
        ['q3', 6],
      ],
      'a queue with nothing due has no age',
    );
    // A paused queue has no age: its jobs wait on purpose (JobvisorOldestPendingTooOld must not page).
    await pauseQueue(db.pool, 'q3');
    assert.deepEqual(
      (await oldestDueByQueue(store, at(1000))).filter((a) => a.queue !== 'ancient').map((a) => a.queue),
      ['default'],
    );
    await resumeQueue(db.pool, 'q3');
    assert.equal((await oldestDueByQueue(store, at(1000))).filter((a) => a.queue === 'q3').length, 1);
  });

  it('reads the oldest due age in a few pages however large the backlog', async () => {
    // 100,000 due jobs: counting them reads every index entry; the age reads the head.
    await db.pool.query(
      `INSERT INTO jobvisor.jobs (kind, run_at) SELECT 'k', $1::timestamptz - i * interval '1 ms' FROM generate_series(1, 100000) i`,
      [T0],
    );
    const oldest = (s: Store) => oldestDueByQueue(s, at(0));
    const { value, pages, plan } = await pagesRead(db.url, oldest, oldest);
    assert.deepEqual(value, [{ queue: 'default', oldest_due_s: 100 }]);
    assert.ok(pages < 20, `the age read ${pages} pages:\n${plan}`);
    const counted = await pagesRead(db.url, countActiveJobs, countActiveJobs);
    assert.ok(counted.pages > 10 * pages, `the counts read ${counted.pages} pages, the age ${pages}`);
  });

  it('retries dead letters and cancels pending jobs', async () => {
    const ids = await add(3, { maxAttempts: 1 });
    const claims = await claimJobs(store, { owner: 'A', queue: 'default', limit: 2, leaseMs: 1000, now: at(0) });
    await failJobs(
      store,
      'A',
      claims.map((c) => ({ id: c.id, token: c.token, error: 'x', permanent: false, delayMs: 0 })),
      at(0),
    );
    assert.deepEqual(
      (await retryJobs(store, { ids: [ids[0]!, ids[2]!] })).ids,
      [ids[0]],
      'only failed/cancelled are retried',
    );
    assert.equal((await row(ids[0]!)).attempts, 0);
    const dead = await retryJobs(store, { filter: { status: 'failed', kind: 'k' } });
    assert.deepEqual([dead.matched, dead.changed], [1, 1]);
    assert.equal((await statusOf(store, [ids[1]!])).get(ids[1]!), 'pending');
    assert.deepEqual((await cancelJobs(store, { ids })).ids?.sort(), [...ids].sort());
    assert.equal((await row(ids[2]!)).status, 'cancelled');
  });
});

describe('notifications', () => {
  it('name the queue: one per distinct queue of an insert statement, and the queue of a re-queued job', async () => {
    const listener = new pg.Client({ connectionString: db.url });
    await listener.connect();
    const heard: string[] = [];
    let wake: (() => void) | undefined;
    listener.on('notification', (m) => {
      heard.push(m.payload ?? '');
      wake?.();
    });
    const hear = async (n: number) => {
      while (heard.length < n) await new Promise<void>((resolve) => (wake = resolve));
      return heard.splice(0, n).sort();
    };
    try {
      await listener.query('LISTEN jobvisor_jobs');
      await enqueueMany(db.pool, [
        { kind: 'k', queue: 'mail' },
        { kind: 'k', queue: 'mail' },
        { kind: 'k', queue: 'reports' },
      ]);
      assert.deepEqual(await hear(2), ['mail', 'reports']);
      // COPY (a large batch) takes the same trigger.
      await enqueueMany(
        db.pool,
        Array.from({ length: 600 }, (_, i) => ({ kind: 'k', queue: i % 2 ? 'mail' : 'cpu' })),
      );
      assert.deepEqual(await hear(2), ['cpu', 'mail']);
      const [job] = await claimJobs(store, { owner: 'A', queue: 'reports', limit: 1, leaseMs: 1000 });
      assert.ok(job);
      await releaseJobs(store, 'A', [{ id: job.id, token: job.token }]);
      assert.deepEqual(await hear(1), ['reports']);
      // Claiming, completing and failing for good announce nothing: the marker comes next.
      const [again] = await claimJobs(store, { owner: 'A', queue: 'reports', limit: 1, leaseMs: 1000 });
      assert.ok(again);
      await completeJobs(store, 'A', [{ id: again.id, token: again.token }]);
      const [other] = await claimJobs(store, { owner: 'A', queue: 'mail', limit: 1, leaseMs: 1000 });
      assert.ok(other);
      await failJobs(store, 'A', [{ id: other.id, token: other.token, error: 'bad', permanent: true, delayMs: 0 }]);
      await db.pool.query("SELECT pg_notify('jobvisor_jobs', 'marker')");
      assert.deepEqual(await hear(1), ['marker']);
    } finally {
      await listener.end();
    }
  });
});
