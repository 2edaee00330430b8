/**
 * Reading every task's options (importing sharp, the PDF libraries) waits for
 * a quiet moment: 2 s after start if no job is held then, otherwise once none
 * is, and at the latest 30 s after start. Before, it ran 2 s after start
 * whatever the supervisor was doing, and a pod started into a backlog paid
 * 0.4–0.9 s of CPU for it in the middle of its first burst.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enqueue } from '../../src/queue/enqueue.ts';
import { QuietStart } from '../../src/supervisor/claim/quiet_start.ts';
import type { Supervisor } from '../../src/supervisor/supervisor.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { GATE_TABLES, gateRunsOf, tellGate } from '../helpers/gate.ts';
import { nextEvent, startSupervisor } from '../helpers/inprocess.ts';
import { clockPasses, until } from '../helpers/poll.ts';

/** A QuietStart whose busy state the test sets; `ran` resolves when it runs. */
function harness(afterMs: number, latestMs: number, busy: boolean) {
  const state = { busy, deferred: 0, runs: 0 };
  let ran!: () => void;
  // QuietStart's timers are unref'd (they must not keep a process alive): this one
  // keeps the test's event loop going until the work has run.
  const ranPromise = new Promise<void>((resolve) => (ran = resolve));
  const alive = setInterval(() => {}, 1000);
  void ranPromise.then(() => clearInterval(alive));
  const quiet = new QuietStart({
    afterMs,
    checkMs: 5,
    latestMs,
    busy: () => state.busy,
    deferred: () => state.deferred++,
    run: () => {
      state.runs++;
      ran();
    },
  });
  return {
    quiet,
    state,
    ran: ranPromise,
    stopAlive: () => clearInterval(alive),
    deferredOnce: () =>
      until(
        'the work deferred',
        () => state.deferred,
        (n) => n === 1,
        5_000,
        5,
      ),
  };
}

/** The options of each kind `supervisor` has read, as its `task:read` events tell them. */
function kindsRead(supervisor: Supervisor): Map<string, { queue?: string } | null> {
  const read = new Map<string, { queue?: string } | null>();
  supervisor.events.on('task:read', ({ kind, options }) => read.set(kind, options));
  return read;
}

/** Lets several 5 ms checks pass: what must not happen would have happened by then. */
async function pastChecks(): Promise<void> {
  await clockPasses('30 ms later', 30, 5);
}

describe('QuietStart', () => {
  it('runs after afterMs when not busy then, once', async () => {
    const h = harness(5, 60_000, false);
    h.quiet.start();
    await h.ran;
    assert.deepEqual(h.state, { busy: false, deferred: 0, runs: 1 });
  });

  it('when busy after afterMs, waits for a check that finds it quiet', async () => {
    const h = harness(5, 60_000, true);
    h.quiet.start();
    await h.deferredOnce();
    assert.equal(h.state.runs, 0, 'nothing runs while busy');
    h.state.busy = false;
    await h.ran;
    assert.deepEqual(h.state, { busy: false, deferred: 1, runs: 1 });
  });

  it('runs at latestMs however busy, and only once', async () => {
    const h = harness(5, 200, true);
    const startedAt = performance.now();
    h.quiet.start();
    await h.ran;
    const ranAfterMs = performance.now() - startedAt;
    h.state.busy = false;
    // Later checks, had any been left armed, would run at 5 ms intervals.
    await pastChecks();
    assert.ok(ranAfterMs >= 199, `ran ${ranAfterMs.toFixed(1)} ms after start, before latestMs`);
    // Deferred once, unless the first check itself came after latestMs (a timer late by 200 ms on a
    // loaded machine; with latestMs 40, load 15 once did that).
    assert.equal(h.state.runs, 1);
    assert.ok(h.state.deferred <= 1, `deferred ${h.state.deferred} times`);
  });

  it('never runs once stopped', async () => {
    const h = harness(5, 60_000, true);
    h.quiet.start();
    await h.deferredOnce();
    h.quiet.stop();
    h.state.busy = false;
    await pastChecks();
    assert.equal(h.state.runs, 0);
    h.stopAlive();
  });
});

describe('a supervisor reads every task at a quiet moment', () => {
  let db: TestDatabase;
  let supervisor: Supervisor | undefined;
  const config = { queues: { default: { concurrency: 2 }, cpu: { concurrency: 1 } } };

  before(async () => {
    db = await createTestDatabase('quiet_start');
    await db.pool.query(GATE_TABLES);
  });

  after(async () => {
    await supervisor?.stop();
    await db?.drop();
  });

  it('with nothing to do, reads them 2 s after start', async () => {
    supervisor = startSupervisor(db.url, config);
    const read = kindsRead(supervisor);
    let deferred = false;
    supervisor.events.on('tasks:deferred', () => (deferred = true));
    await supervisor.start();
    // The built-in thumbnail task declares queue 'cpu'.
    await until(
      'thumbnail read',
      () => read.get('thumbnail')?.queue,
      (q) => q === 'cpu',
      15_000,
    );
    assert.equal(deferred, false);
    await supervisor.stop();
    supervisor = undefined;
  });

  it('holding a job at 2 s, reads them once the job is done, not before', async () => {
    const job = await enqueue(db.pool, 'gate', {});
    supervisor = startSupervisor(db.url, config);
    const read = kindsRead(supervisor);
    const deferred = nextEvent(supervisor, 'tasks:deferred');
    await supervisor.start();
    const [run] = await until(
      'the gate job running',
      () => gateRunsOf(db.pool, job.id),
      (r) => r.length === 1,
    );

    const [{ held }] = await deferred;
    assert.equal(held, 1);
    assert.equal(read.has('thumbnail'), false, 'no task read while the job is held');

    await tellGate(db.pool, run.run, 'done');
    await until(
      'thumbnail read',
      () => read.get('thumbnail')?.queue,
      (q) => q === 'cpu',
      15_000,
    );
    const { rows } = await db.pool.query('SELECT status FROM jobvisor.jobs WHERE id = $1', [job.id]);
    assert.equal(rows[0].status, 'done');
  });
});
