/**
 * Batch tasks (task option `batch`) in a real supervisor with real worker
 * threads: jobs gather by size and by maxWait, by key; one call answers per
 * job; a throw fails every job of the call; a job cancelled while it gathers
 * is not passed; a job whose claim is lost while its call runs is not written.
 * The fixture tasks (fixtures/lib/batch.js) record every call in batch_calls.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { batchCallOf, cancelJobs } from '../../src/queue/admin/index.ts';
import { enqueue, enqueueMany } from '../../src/queue/enqueue.ts';
import { until } from '../helpers/poll.ts';
import { supervisedFile } from '../helpers/supervised.ts';

const calls: Array<{ kind: string; size: number; fillMs: number }> = [];

const file = supervisedFile(
  'batch_tasks',
  {
    queues: { default: { concurrency: 20, jobsPerThread: 10 } },
    // A long lease: its heartbeat (a third of it) never runs before a call starts here.
    jobs: { timeout: '30s', lease: '5m' },
    backoff: { base: '60s', max: '60s', jitter: 0 },
    pool: { maxThreads: 2 },
  },
  {
    prepare: async (db) => {
      await db.pool.query(`
      CREATE TABLE batch_calls (call serial, kind text, ids bigint[], key text, at timestamptz DEFAULT clock_timestamp());
      CREATE TABLE batch_release (name text);`);
    },
    beforeStart: (supervisor) => {
      supervisor.events.on('batch:called', ({ kind, size, fillMs }) => calls.push({ kind, size, fillMs }));
    },
  },
);

type Payload = { n?: number; outcome?: 'ok' | 'fail' | 'permanent' | 'throw'; hold?: string; tenant?: string };

async function add(kind: string, payloads: Payload[], maxAttempts = 3): Promise<string[]> {
  const jobs = payloads.map((payload) => ({ kind, payload, maxAttempts }));
  return (await enqueueMany(file.db.pool, jobs)).map((r) => r.id);
}

/** The calls that passed any of `ids`, each as its ids (sorted) and key. */
async function callsOf(ids: string[]): Promise<Array<{ ids: string[]; key: string | null; at: Date }>> {
  const { rows } = await file.db.pool.query<{ ids: string[]; key: string | null; at: Date }>(
    'SELECT ARRAY(SELECT x::text FROM unnest(ids) AS x ORDER BY x) AS ids, key, at FROM batch_calls WHERE ids && $1::bigint[] ORDER BY call',
    [ids],
  );
  return rows;
}

async function jobsOf(ids: string[]) {
  const { rows } = await file.db.pool.query<{
    id: string;
    status: string;
    attempt: number;
    result: unknown;
    last_error: string | null;
    locked_by: string | null;
    batch_id: string | null;
  }>(
    'SELECT id::text, status, attempts AS attempt, result, last_error, locked_by, batch_id::text FROM jobvisor.jobs AS j WHERE j.id = ANY($1::bigint[]) ORDER BY j.id',
    [ids],
  );
  return rows;
}

function untilSettled(ids: string[], done: (rows: Awaited<ReturnType<typeof jobsOf>>) => boolean, what: string) {
  return until(what, () => jobsOf(ids), done, 20_000);
}

describe('batch tasks', () => {
  it('gathers jobs into calls of maxSize, and a short last call after maxWait', async () => {
    const ids = await add(
      'batch_call',
      Array.from({ length: 12 }, (_, n) => ({ n })),
    );
    const rows = await untilSettled(ids, (r) => r.every((j) => j.status === 'done'), 'all 12 done');
    const made = await callsOf(ids);
    const sizes = made.map((c) => c.ids.length);
    assert.ok(
      sizes.every((n) => n <= 5),
      `no call over maxSize 5: ${JSON.stringify(sizes)}`,
    );
    assert.ok(sizes.filter((n) => n === 5).length >= 2, `full calls made at maxSize: ${JSON.stringify(sizes)}`);
    assert.deepEqual(made.flatMap((c) => c.ids).sort(), [...ids].sort(), 'each job passed once');
    rows.forEach((j, i) => assert.deepEqual(j.result, { n: i, attempt: 1 }, `job ${j.id} stores its own result`));
    // One call, one batch_id on each of its jobs.
    for (const c of made) {
      const mine = rows.filter((j) => c.ids.includes(j.id));
      assert.equal(new Set(mine.map((j) => j.batch_id)).size, 1, 'the jobs of a call share its batch_id');
      assert.ok(mine[0]?.batch_id, 'batch_id is set');
      // The job page's list of the other jobs of its call.
      const listed = await batchCallOf(file.store, c.ids[0] as string);
      assert.equal(listed?.total, c.ids.length);
      assert.deepEqual(listed?.jobs.map((j) => j.id).sort(), [...c.ids].sort());
    }
  });

  it('calls a lone job once maxWait has passed since its claim', async () => {
    const [id] = await add('batch_call', [{ n: 1 }]);
    const started = Date.now();
    await untilSettled([id as string], (r) => r[0]?.status === 'done', 'the lone job done');
    const [call] = await callsOf([id as string]);
    assert.deepEqual(call?.ids, [id]);
    const fill = calls.at(-1);
    assert.equal(fill?.size, 1, `batch:called for a call of 1: ${JSON.stringify(calls)}`);
    assert.ok(fill.fillMs >= 390, `the call waited for maxWait (400 ms): ${fill.fillMs} ms`);
    assert.ok(Date.now() - started < 5_000);
  });

  it('records one outcome per job: done with its value, retried, dead-lettered', async () => {
    const ids = await add(
      'batch_call',
      [{ n: 0 }, { n: 1, outcome: 'fail' }, { n: 2, outcome: 'permanent' }, { n: 3 }, { n: 4 }],
      2,
    );
    const rows = await untilSettled(
      ids,
      (r) => r.every((j) => j.attempt === 1 && j.status !== 'running'),
      'every job written',
    );
    assert.equal((await callsOf(ids)).length, 1, 'one call');
    const [a, b, c, d, e] = rows;
    for (const done of [a, d, e]) assert.equal(done?.status, 'done');
    assert.deepEqual(d?.result, { n: 3, attempt: 1 });
    assert.equal(b?.status, 'pending', 'the failed job waits for its retry');
    assert.match(b?.last_error ?? '', /failed alone/);
    assert.equal(c?.status, 'failed', 'the permanent failure is dead-lettered');
    assert.match(c?.last_error ?? '', /can never work/);
  });

  it('fails every job of a call that throws, each retried on its own', async () => {
    const ids = await add('batch_call', [{ n: 0 }, { n: 1, outcome: 'throw' }, { n: 2 }]);
    const rows = await untilSettled(ids, (r) => r.every((j) => j.status === 'pending' && j.attempt === 1), 'retried');
    for (const j of rows) assert.match(j.last_error ?? '', /refused the whole call/);
    assert.equal((await callsOf(ids)).length, 1);
  });

  it('splits calls by the batch key', async () => {
    const tenants = ['a', 'b', 'a', 'b', 'a', 'c'];
    const ids = await add(
      'batch_keyed',
      tenants.map((tenant, n) => ({ n, tenant })),
    );
    await untilSettled(ids, (r) => r.every((j) => j.status === 'done'), 'all keyed jobs done');
    const made = await callsOf(ids);
    const byKey = new Map(made.map((c) => [c.key, c.ids]));
    assert.equal(made.length, 3, `one call per tenant: ${JSON.stringify(made)}`);
    const idsOf = (t: string) => ids.filter((_, i) => tenants[i] === t).sort();
    for (const t of ['a', 'b', 'c']) assert.deepEqual(byKey.get(t), idsOf(t), `tenant ${t}'s call`);
  });

  it('does not pass a job cancelled while it gathers', async () => {
    const ids = await add('batch_slow', [{ n: 0 }, { n: 1 }]);
    await untilSettled(ids, (r) => r.every((j) => j.status === 'running'), 'both claimed');
    const [gone, kept] = ids as [string, string];
    assert.deepEqual((await cancelJobs(file.store, { ids: [gone] })).ids, [gone]);
    const rows = await untilSettled(ids, (r) => r[1]?.status === 'done', 'the other job done');
    assert.equal(rows[0]?.status, 'cancelled');
    assert.deepEqual(
      (await callsOf(ids)).map((c) => c.ids),
      [[kept]],
      'the call passed only the job still held',
    );
  });

  it('does not write the outcome of a job whose claim was lost during the call', async () => {
    const ids = await add('batch_call', [{ n: 0, hold: 'lost' }, { n: 1 }, { n: 2 }]);
    await until(
      'the call started',
      () => callsOf(ids),
      (c) => c.length === 1,
    );
    const [, taken] = ids as [string, string, string];
    // Another file.supervisor took job `taken` over (its lease had run out there): a new claim.
    await file.db.pool.query(
      "UPDATE jobvisor.jobs SET locked_by = 'elsewhere', lease_token = lease_token + 1000 WHERE id = $1",
      [taken],
    );
    await file.db.pool.query("INSERT INTO batch_release VALUES ('lost')");
    const rows = await untilSettled(
      ids,
      (r) => r[0]?.status === 'done' && r[2]?.status === 'done',
      'the jobs still held done',
    );
    assert.equal(rows[1]?.status, 'running', 'the lost job is left to its new owner');
    assert.equal(rows[1]?.locked_by, 'elsewhere');
    assert.equal(rows[1]?.result, null);
  });

  it("starts a workflow child only on its own parent's outcome, not its call's", async () => {
    const [ok, bad] = await add('batch_call', [{ n: 0 }, { n: 1, outcome: 'permanent' }], 1);
    const child = (await enqueue(file.db.pool, 'batch_call', { n: 2 }, { dependsOn: [ok as string] })).id;
    const blocked = (await enqueue(file.db.pool, 'batch_call', { n: 3 }, { dependsOn: [bad as string] })).id;
    await untilSettled([child], (r) => r[0]?.status === 'done', 'the child of the done parent done');
    const [parentCall, childCall] = await callsOf([ok as string, child]);
    assert.ok(parentCall?.ids.includes(bad as string), 'both parents ran in one call');
    assert.deepEqual(childCall?.ids, [child], 'the child ran in a later call');
    // onParentFailure 'cancel' (the default): the dead letter of its parent cancels it.
    await untilSettled(
      [blocked],
      (r) => r[0]?.status === 'cancelled',
      'the child of the dead-lettered parent cancelled',
    );
    assert.deepEqual(await callsOf([blocked]), []);
  });
});
