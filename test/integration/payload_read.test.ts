/**
 * Payloads stored in more than INLINE_PAYLOAD_BYTES ride no claim: every claim
 * statement (plain, queue-wide limited, per-key limited) returns them without
 * text, and the worker thread that runs the job reads them, fenced by the
 * claim's token. A real supervisor then runs such jobs with exactly their
 * payloads, and dead-letters one whose text turns out over the limit, alone.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { claimJobs, INLINE_PAYLOAD_BYTES } from '../../src/queue/claim.ts';
import { claimLimited } from '../../src/queue/claim_limited.ts';
import { readClaimedPayload } from '../../src/queue/payload_read.ts';
import type { Store } from '../../src/queue/sql.ts';
import type { Supervisor } from '../../src/supervisor/supervisor.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { withPlans } from '../helpers/explain.ts';
import { startSupervisor } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';

let db: TestDatabase;
let store: Store;
const supervisors: Supervisor[] = [];

/** Text that does not compress: its stored size is about its length. */
const incompressible = (chars: number) => randomBytes(chars).toString('base64').slice(0, chars);

before(async () => {
  db = await createTestDatabase('payload_read');
  store = { db: db.pool, schema: 'jobvisor' };
  await db.pool.query('CREATE TABLE chaos_echo (job_id bigint PRIMARY KEY, payload jsonb)');
});

after(async () => {
  await Promise.all(supervisors.map((s) => s.stop()));
  await db.drop();
});

async function insert(queue: string, payloads: unknown[], kind = 'k'): Promise<string[]> {
  const { rows } = await db.pool.query<{ id: string }>(
    `INSERT INTO jobvisor.jobs (kind, queue, payload)
     SELECT $1, $2, p FROM unnest($3::jsonb[]) WITH ORDINALITY AS u(p, n) ORDER BY n RETURNING id`,
    [kind, queue, payloads.map((p) => JSON.stringify(p))],
  );
  return rows.map((r) => r.id);
}

const claimArgs = (queue: string) => ({ owner: 'o', queue, limit: 10, leaseMs: 60_000, maxPayloadBytes: 1 << 20 });

describe('claims', () => {
  it('carry small payloads and leave out those stored over INLINE_PAYLOAD_BYTES, in every claim statement', async () => {
    const small = { id: 1, text: 'x'.repeat(INLINE_PAYLOAD_BYTES - 100) };
    const big = { id: 2, blob: incompressible(INLINE_PAYLOAD_BYTES * 4) };
    const claims = {
      plain: async () => claimJobs(store, claimArgs('plain')),
      global: async () =>
        (await claimLimited(store, { ...claimArgs('global'), limits: { globalConcurrency: 100 } })).jobs,
      keyed: async () =>
        (
          await claimLimited(store, {
            ...claimArgs('keyed'),
            limits: { perKeyConcurrency: 5 },
            cursor: null,
            keylessScan: 'all',
          })
        ).jobs,
    };
    for (const [queue, claim] of Object.entries(claims)) {
      const [smallId, bigId] = await insert(queue, [small, big]);
      const jobs = await claim();
      const byId = new Map(jobs.map((j) => [j.id, j]));
      assert.equal(jobs.length, 2, queue);
      assert.deepEqual(JSON.parse(byId.get(smallId as string)?.payload ?? 'null'), small, `${queue}: small carried`);
      assert.equal(byId.get(smallId as string)?.payloadDeferred, false, queue);
      const deferred = byId.get(bigId as string);
      assert.deepEqual(
        { payload: deferred?.payload, bytes: deferred?.payloadBytes, stored: deferred?.payloadStoredBytes },
        { payload: null, bytes: null, stored: null },
        `${queue}: big not carried, and not taken for oversized`,
      );
      assert.equal(deferred?.payloadDeferred, true, queue);
      // Read with the claim's token it is the stored payload; with another, nothing.
      const read = await readClaimedPayload(db.pool, 'jobvisor', deferred, 1 << 20);
      assert.equal(read.type, 'text');
      assert.deepEqual(JSON.parse((read as { text: string }).text), big);
      const other = { id: bigId as string, token: String(BigInt(deferred?.token) + 1000n) };
      assert.deepEqual(await readClaimedPayload(db.pool, 'jobvisor', other, 1 << 20), { type: 'gone' });
      // Over the limit it is measured, not sent: `{"id": 2, "blob": "…"}` as jsonb prints it.
      assert.deepEqual(await readClaimedPayload(db.pool, 'jobvisor', deferred as never, 4096), {
        type: 'oversized',
        payloadBytes: big.blob.length + 21,
        payloadStoredBytes: null,
      });
    }
  });
});

describe('a read', () => {
  it('converts the payload to text once, not once for each use of the text', async () => {
    const [id] = await insert('once', [{ blob: incompressible(INLINE_PAYLOAD_BYTES * 4) }]);
    const [job] = await claimJobs(store, claimArgs('once'));
    assert.equal(job?.id, id);
    // The plan's output expressions, as auto_explain prints them with VERBOSE: every
    // `(jobs.payload)::text` in them is a conversion (and a decompression) of the payload.
    const plans = await withPlans(db.url, ['SET auto_explain.log_verbose = on'], async (s, seen) => {
      const read = await readClaimedPayload(s.db, 'jobvisor', job as never, 1 << 20);
      assert.equal(read.type, 'text');
      return seen;
    });
    const plan = plans.find((p) => p.includes('jobvisor_read_payload'));
    assert.ok(plan, `no plan of the read among ${plans.length} notices`);
    assert.equal(plan.match(/\(jobs\.payload\)::text/g)?.length, 1, plan);
  });
});

describe('a supervisor', () => {
  it('runs deferred payloads exactly as stored, and dead-letters one over the limit alone', async () => {
    const s = startSupervisor(db.url, {
      jobs: { maxPayloadBytes: 65_536 },
      queues: { default: { concurrency: 10 } },
    });
    supervisors.push(s);
    await s.start();
    const payloads = Array.from({ length: 8 }, (_, i) => ({ i, blob: incompressible(10_000 + i * 5_000) }));
    const ids = await insert('default', payloads, 'chaos_echo');
    // Over the 64 KiB limit, but stored in under 8 × it: only its thread can tell.
    const [tooBig] = await insert('default', [{ blob: incompressible(100_000) }], 'chaos_echo');
    await db.pool.query("NOTIFY jobvisor_jobs, 'default'");
    const rows = await until(
      'every job finished',
      async () =>
        (
          await db.pool.query<{ id: string; status: string; attempts: number; last_error: string | null }>(
            'SELECT id, status, attempts, last_error FROM jobvisor.jobs WHERE id = ANY($1) ORDER BY id',
            [[...ids, tooBig]],
          )
        ).rows,
      (r) => r.every((j) => j.status === 'done' || j.status === 'failed'),
      60_000,
    );
    const echoed = (
      await db.pool.query<{ job_id: string; payload: unknown }>('SELECT job_id::text, payload FROM chaos_echo')
    ).rows;
    const seen = new Map(echoed.map((r) => [r.job_id, r.payload]));
    ids.forEach((id, i) => assert.deepEqual(seen.get(id), payloads[i], `job ${id} ran with its payload`));
    const dead = rows.find((r) => r.id === tooBig);
    assert.equal(dead?.status, 'failed');
    assert.equal(dead?.attempts, 1);
    assert.match(
      dead?.last_error ?? '',
      /^PayloadTooLarge: the payload is 100012 bytes of JSON, over jobs.maxPayloadBytes \(65536\)/,
    );
    assert.equal(seen.has(tooBig as string), false, 'never run');
    assert.ok(rows.filter((r) => r.id !== tooBig).every((r) => r.status === 'done' && r.attempts === 1));
  });
});
