/**
 * `runner.events` is for observers: with every listener removed right after
 * start (the metrics' and logs' included), a limited queue still claims as
 * soon as an outcome is written, a cancelled run still gives its slot back
 * when it ends, and a supervisor that lost its database still finds the
 * primary again and picks jobs up at once (src/supervisor/hooks.ts).
 *
 * One real supervisor behind a TCP proxy (for the outage), poll interval 120 s,
 * so only the hooks can make these fast. The listeners the test adds after the
 * removal only watch.
 */
import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { cancelJobs } from '../../src/queue/admin/index.ts';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import type { Store } from '../../src/queue/sql.ts';
import { LIMITED_RETRY_MS } from '../../src/supervisor/claim/limited.ts';
import type { Supervisor } from '../../src/supervisor/supervisor.ts';
import { startProxy, type Proxy } from '../helpers/chaos/proxy.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { nextEvent, startSupervisor } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';

/** Heartbeat every 3 s; an unrenewed lease lasts 9 s. */
const LEASE_MS = 9000;
const JOBS = 10;

let db: TestDatabase;
let store: Store;
let proxy: Proxy;
let supervisor: Supervisor;

before(async () => {
  db = await createTestDatabase('internal_hooks');
  store = { db: db.pool, schema: 'jobvisor' };
  await db.pool.query('CREATE TABLE naps (job_id bigint, attempt int)');
  proxy = await startProxy({ port: Number(new URL(db.url).port) });
  supervisor = startSupervisor(proxy.urlFor(db.url), {
    poll: { interval: '120s' },
    jobs: { lease: `${LEASE_MS}ms` },
    reaper: { interval: '500ms' },
    pool: { maxThreads: 2 },
    queues: {
      default: { concurrency: 2 },
      limited: { concurrency: 4, globalConcurrency: 1 },
    },
  });
  await supervisor.start();
  supervisor.events.removeAllListeners();
});

after(async () => {
  await supervisor?.stop();
  await proxy?.close();
  await db?.drop();
});

/** A local port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const statusOf = async (id: string) =>
  (await db.pool.query<{ status: string }>('SELECT status FROM jobvisor.jobs WHERE id = $1', [id])).rows[0]?.status;

describe('internal hooks: no behaviour listens to runner.events', () => {
  it('a limited queue claims its next job when an outcome is written, not on its retry timer', async () => {
    const ids = (
      await enqueueMany(
        db.pool,
        Array.from({ length: JOBS }, () => ({ kind: 'chaos_noop', queue: 'limited' })),
      )
    ).map((r) => r.id);
    await until(
      `${JOBS} limited jobs done`,
      async () =>
        (
          await db.pool.query('SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = $2', [
            ids,
            'done',
          ])
        ).rows[0].n,
      (n) => n === JOBS,
      30_000,
    );
    // From the first job's finish: the first one waited for its task's options to be read.
    const { rows } = await db.pool.query<{ ms: number }>(
      'SELECT extract(epoch FROM max(finished_at) - min(finished_at)) * 1000 AS ms FROM jobvisor.jobs WHERE id = ANY($1)',
      [ids],
    );
    const spanMs = Math.round(Number(rows[0]?.ms));
    // One at a time (globalConcurrency 1): on the retry timer alone, (JOBS - 1) × 200 ms at least.
    console.log(`# ${JOBS} jobs one at a time: ${spanMs} ms from the first finish to the last`);
    assert.ok(spanMs < ((JOBS - 1) * LIMITED_RETRY_MS) / 2, `${JOBS} jobs took ${spanMs} ms`);
  });

  it('a cancelled running job of a limited queue gives its slot back when its run ends, not at lease expiry', async () => {
    const [running, next] = (
      await enqueueMany(db.pool, [
        { kind: 'nap', queue: 'limited', payload: { ms: 60_000 } },
        { kind: 'chaos_noop', queue: 'limited' },
      ])
    ).map((r) => r.id);
    await until(
      'the nap running',
      () => statusOf(running as string),
      (s) => s === 'running',
    );
    const cancelledAt = Date.now();
    assert.equal((await cancelJobs(store, { ids: [running as string] })).ids?.length, 1);
    await until(
      'the next job done',
      () => statusOf(next as string),
      (s) => s === 'done',
      30_000,
    );
    const waitedMs = Date.now() - cancelledAt;
    console.log(`# next job of the slot done ${waitedMs} ms after the cancel (lease ${LEASE_MS} ms)`);
    // The heartbeat (every lease/3) finds the claim gone and stops the run; without the
    // hook, the slot waits for the lease to expire, at least 2/3 of a lease after the cancel.
    assert.ok(waitedMs < LEASE_MS / 2, `waited ${waitedMs} ms`);
  });

  it('after an outage, the primary is found again and a job is picked up at once (poll 120 s)', async () => {
    const port = Number(new URL(db.url).port);
    const writable = nextEvent(supervisor, 'database:writable', () => true, 30_000);
    // The endpoint leads nowhere (connections refused), and every open connection is closed.
    proxy.retarget({ port: await closedPort() });
    proxy.drop(() => true);
    await until(
      'the supervisor sees the outage',
      () => supervisor.primary.unwritable,
      (v) => v,
      20_000,
    );
    proxy.retarget({ port });
    const [{ unwritableMs }] = await writable;
    console.log(`# writable again after ${unwritableMs} ms`);
    const id = (await enqueueMany(db.pool, [{ kind: 'chaos_noop' }]))[0]?.id as string;
    // Long before the poll (120 s after start): the listener and the fetchers are back.
    await until(
      'the job done',
      () => statusOf(id),
      (s) => s === 'done',
      20_000,
    );
  });
});
