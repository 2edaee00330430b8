/**
 * The supervisors table with real supervisor processes: a supervisor's row
 * appears with its queues and concurrency, its heartbeat and jobs in flight
 * advance, it is removed when the process drains on SIGTERM, and the row of a
 * supervisor killed with SIGKILL expires (hidden from readers, then deleted
 * by another supervisor's cleanup).
 */
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { listSupervisors, type SupervisorRow } from '../../src/queue/admin/index.ts';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import type { Store } from '../../src/queue/sql.ts';
import { createPresence } from '../../src/supervisor/leases/presence.ts';
import { VERSION } from '../../src/version.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';
import { assertDrains, type SpawnedSupervisor, spawnSupervisor } from '../helpers/supervisor.ts';

let db: TestDatabase;
let store: Store;
const spawned: SpawnedSupervisor[] = [];

before(async () => {
  db = await createTestDatabase('supervisors');
  store = { db: db.pool, schema: 'jobvisor' };
  await db.pool.query(
    'CREATE TABLE executions (job_id bigint, attempt int, pid int, finished boolean NOT NULL DEFAULT false)',
  );
});

after(async () => {
  await Promise.all(spawned.map((s) => s.stop('SIGKILL')));
  await db.drop();
});

/** Queues merge with config/default.json's by name: `queues` adds to those. */
async function supervisor(queues: Record<string, { concurrency: number }>): Promise<SpawnedSupervisor> {
  const s = await spawnSupervisor({
    databaseUrl: db.url,
    tasksDir: FIXTURE_TASKS,
    config: {
      pool: { maxThreads: 1, dbPoolSize: 2 },
      queues,
      jobs: { lease: '3s' },
      cleanup: { interval: '1s' },
      poll: { interval: '1s' },
      shutdown: { grace: '1s' },
    },
    readyTimeoutMs: 60_000,
  });
  spawned.push(s);
  return s;
}

async function rowOf(pid: number): Promise<SupervisorRow | undefined> {
  return (await listSupervisors(store)).find((r) => r.pid === pid);
}

async function stored(pid: number): Promise<number> {
  return (await db.pool.query('SELECT 1 FROM jobvisor.supervisors WHERE pid = $1', [pid])).rowCount ?? 0;
}

describe('supervisors table', () => {
  it('a row per live supervisor: queues, heartbeat, in flight; removed on SIGTERM; expired after SIGKILL', async () => {
    const a = await supervisor({ alpha: { concurrency: 4 }, mail: { concurrency: 2 } });
    const b = await supervisor({ beta: { concurrency: 1 } });

    const first = await until(
      'A listed',
      () => rowOf(a.pid),
      (r) => r !== undefined,
    );
    assert.ok(first);
    assert.deepEqual([first.queues.alpha, first.queues.mail], [4, 2], JSON.stringify(first.queues));
    assert.equal(first.host, hostname());
    assert.equal(first.version, VERSION);
    assert.match(first.id, new RegExp(`:${a.pid}:`));
    // Each supervisor writes its first row while it starts, without waiting for
    // it: B may be ready before its row is, on a loaded machine.
    const second = await until(
      'B listed',
      () => rowOf(b.pid),
      (r) => r !== undefined,
    );
    assert.equal(second?.queues.beta, 1);

    // Jobs in flight are reported, and the heartbeat (every lease/3 = 1 s) moves on.
    await enqueueMany(db.pool, [
      { kind: 'sleep', queue: 'alpha', payload: { ms: 60_000 } },
      { kind: 'sleep', queue: 'alpha', payload: { ms: 60_000 } },
    ]);
    const busy = await until(
      'A reports 2 in flight',
      () => rowOf(a.pid),
      (r) => r?.in_flight === 2,
    );
    assert.ok(busy && busy.heartbeat_at > first.heartbeat_at);
    const owner = await db.pool.query<{ locked_by: string }>(
      `SELECT DISTINCT locked_by FROM jobvisor.jobs WHERE status = 'running'`,
    );
    assert.deepEqual(
      owner.rows.map((r) => r.locked_by),
      [first.id],
      'the row id is the owner written on jobs',
    );

    // SIGKILL: no clean exit. The row is hidden once it expires (3 leases after
    // the last beat), then deleted by B's cleanup.
    assert.equal(await a.stop('SIGKILL'), null);
    assert.ok(await rowOf(a.pid), 'still listed right after the kill');
    await until(
      'A hidden',
      () => rowOf(a.pid),
      (r) => r === undefined,
      20_000,
    );
    await until(
      'A deleted',
      () => stored(a.pid),
      (n) => n === 0,
      10_000,
    );

    // SIGTERM: drained, exit 0, row gone.
    await assertDrains(b);
    assert.equal(await stored(b.pid), 0);
  });
});

describe('presence', () => {
  it('a database error is logged once per failing streak and never thrown', async () => {
    const lines: Array<{ msg: string }> = [];
    const log = pino(
      { level: 'warn' },
      new Writable({
        write(chunk: Buffer, _enc, done) {
          lines.push(JSON.parse(chunk.toString()) as { msg: string });
          done();
        },
      }),
    );
    const presence = createPresence({
      store: { db: db.pool, schema: 'jobvisor' },
      id: 'test:1:abc',
      queues: { default: 1 },
      leaseMs: 3000,
      inFlight: () => 0,
      log,
    });
    await presence.beat();
    assert.equal((await listSupervisors(store)).filter((r) => r.id === 'test:1:abc').length, 1);
    await db.pool.query('ALTER TABLE jobvisor.supervisors RENAME TO supervisors_away');
    try {
      await presence.beat();
      await presence.beat();
      await presence.remove();
      assert.deepEqual(
        lines.map((l) => l.msg),
        ['could not record this supervisor in the supervisors table'],
      );
    } finally {
      await db.pool.query('ALTER TABLE jobvisor.supervisors_away RENAME TO supervisors');
    }
    await presence.beat();
    await presence.remove();
    assert.equal((await listSupervisors(store)).filter((r) => r.id === 'test:1:abc').length, 0);
  });
});
