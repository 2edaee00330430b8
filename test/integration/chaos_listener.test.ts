/**
 * Chaos: a dead listener. The poll interval is 60 s, so only the LISTEN
 * connection can make pickup fast: a listener that dies loudly
 * (pg_terminate_backend) or silently (a proxy that stops forwarding its
 * connection only) must be noticed and replaced, and pickup must be instant
 * again within seconds, never fall back to the 60 s poll.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Supervisor } from '../../src/supervisor/supervisor.ts';
import { report, summary, until } from '../helpers/chaos/measure.ts';
import { startProxy, type Proxy } from '../helpers/chaos/proxy.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { nextEvent, startSupervisor } from '../helpers/inprocess.ts';

const POLL = '60s';
/** Pickup must be far below the poll interval; 1.5 s leaves room for a loaded CI machine. */
const INSTANT_MS = 1500;

let db: TestDatabase;
let proxy: Proxy;
let supervisor: Supervisor;

before(async () => {
  db = await createTestDatabase('chaos_listener');
  proxy = await startProxy({ port: Number(new URL(db.url).port) });
  supervisor = startSupervisor(proxy.urlFor(db.url), {
    poll: { interval: POLL },
    queues: { default: { concurrency: 4, jobsPerThread: 4 } },
    pool: { maxThreads: 1 },
  });
  await supervisor.start();
  assert.ok(supervisor.listening, 'listening after start');
});

after(async () => {
  await supervisor?.stop();
  await proxy?.close();
  await db?.drop();
});

/**
 * Inserts one job with plain SQL, waits until it is done, and returns its
 * pickup time as the database saw it: started_at (the claim) − created_at.
 */
async function pickup(): Promise<number> {
  const { rows } = await db.pool.query("INSERT INTO jobvisor.jobs (kind) VALUES ('chaos_noop') RETURNING id");
  const id = rows[0].id as string;
  const row = await until(
    `job ${id} done`,
    async () =>
      (
        await db.pool.query(
          'SELECT status, extract(epoch FROM started_at - created_at) * 1000 AS pickup_ms FROM jobvisor.jobs WHERE id = $1',
          [id],
        )
      ).rows[0],
    (r) => r.status === 'done',
    70_000,
    20,
  );
  return Math.round(Number(row.pickup_ms));
}

async function pickups(n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(await pickup());
  return out;
}

const listenerPid = async () =>
  (
    await db.pool.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name = 'jobvisor-listener'",
      [db.name],
    )
  ).rows.map((r) => r.pid);

describe('chaos: dead listener', () => {
  it('baseline: a job inserted with plain SQL starts at once (poll interval 60 s)', async () => {
    const times = await pickups(5);
    report('listener.baseline', { pickupMs: summary(times) });
    assert.ok(Math.max(...times) < INSTANT_MS, `pickup ${JSON.stringify(times)} ms`);
  });

  it('pg_terminate_backend on the LISTEN session: reconnects and pickup is instant again', async () => {
    const [pid] = await listenerPid();
    assert.ok(pid, 'a jobvisor-listener session exists');
    const lost = nextEvent(supervisor, 'listener:lost');
    const back = nextEvent(supervisor, 'listener:connected', (e) => e.reconnect, 20_000);
    const t0 = Date.now();
    await db.pool.query('SELECT pg_terminate_backend($1)', [pid]);
    const [{ error }] = await lost;
    const lostMs = Date.now() - t0;
    await back;
    const reconnectMs = Date.now() - t0;
    const after = await pickups(3);
    const pids = await listenerPid();
    report('listener.terminated', {
      error,
      lostMs,
      reconnectMs,
      pickupAfterMs: summary(after),
      listenerSessions: pids.length,
    });
    assert.ok(reconnectMs < 5000, `reconnected in ${reconnectMs} ms`);
    assert.ok(Math.max(...after) < INSTANT_MS, `pickup after reconnect ${JSON.stringify(after)} ms`);
    assert.equal(pids.length, 1, 'exactly one listener session');
    assert.notEqual(pids[0], pid, 'a new backend');
  });

  it('a listener connection that silently stops delivering is noticed by the self-ping and replaced', async () => {
    await until(
      'listener connected through the proxy',
      () => proxy.connections().filter((c) => c.applicationName === 'jobvisor-listener' && !c.frozen).length,
      (n) => n === 1,
      5000,
    );
    const lost = nextEvent(supervisor, 'listener:lost', () => true, 30_000);
    const back = nextEvent(supervisor, 'listener:connected', (e) => e.reconnect, 30_000);
    const frozen = proxy.freeze((c) => c.applicationName === 'jobvisor-listener');
    assert.equal(frozen, 1, 'froze the listener connection only');
    const t0 = Date.now();
    // A job committed while the listener is deaf: the 60 s poll would take up to a
    // minute; the self-ping must notice first, and the new listener picks it up.
    const during = pickup();
    during.catch(() => {});
    const [{ error }] = await lost;
    const detectMs = Date.now() - t0;
    await back;
    const reconnectMs = Date.now() - t0;
    const duringMs = await during;
    const after = await pickups(3);
    report('listener.silent', {
      error,
      detectMs,
      reconnectMs,
      pickupOfJobInsertedWhileDeafMs: duringMs,
      pickupAfterMs: summary(after),
    });
    assert.match(error, /stopped delivering/);
    // Self-ping every 5 s, answer expected within 3 s: noticed within 8 s (+ slack for a loaded machine).
    assert.ok(detectMs < 10_000, `noticed after ${detectMs} ms`);
    assert.ok(duringMs < 12_000, `the job inserted while deaf started after ${duringMs} ms, not at the next 60 s poll`);
    assert.ok(Math.max(...after) < INSTANT_MS, `pickup after reconnect ${JSON.stringify(after)} ms`);
    const live = proxy.connections().filter((c) => c.applicationName === 'jobvisor-listener' && !c.frozen && !c.closed);
    assert.equal(live.length, 1, 'one live listener connection');
  });
});
