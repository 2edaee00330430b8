/**
 * The completer's decisions without a database (River's runOnce style): a fake
 * OutcomeStore answers each write as the test says and records what it was
 * asked to write; the test records outcomes, lets one write happen (flush), and
 * asserts the statements, the events and the claims still held. The same
 * writers against a real PostgreSQL: hardening_writes, snooze, results_progress.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import type { Failures } from '../../src/queue/complete.ts';
import type { Sleeps } from '../../src/queue/sleep.ts';
import type { Snoozes } from '../../src/queue/snooze.ts';
import type { Waits } from '../../src/queue/wait.ts';
import type { ClaimedJob, Fence } from '../../src/queue/types.ts';
import type { Failure, Recorded } from '../../src/supervisor/complete/outcome.ts';
import type { OutcomeStore } from '../../src/supervisor/complete/store.ts';
import { Completer } from '../../src/supervisor/completer.ts';
import { SupervisorEvents, type JobRef } from '../../src/supervisor/events.ts';

/** A write the fake store was asked for. */
type Call =
  | { op: 'complete'; ids: string[]; results?: Array<string | null> }
  | { op: 'fail'; rows: Failures }
  | { op: 'release'; ids: string[] }
  | { op: 'snooze'; rows: Snoozes }
  | { op: 'sleep'; rows: Sleeps }
  | { op: 'park'; rows: Waits }
  | { op: 'deadLetter'; id: string; lastError: string };

/**
 * Writes succeed for every row unless the test says otherwise: `fenced` rows
 * are refused through the fence, `refuse(ids)` may throw for a statement (as
 * PostgreSQL fails a whole statement for one bad row), `dead` ids come back as
 * dead letters from fail/snooze.
 */
class FakeStore implements OutcomeStore {
  readonly calls: Call[] = [];
  fenced = new Set<string>();
  dead = new Set<string>();
  refuse: (ids: string[]) => Error | undefined = () => undefined;
  refuseFallback: (id: string) => Error | undefined = () => undefined;

  /** Answers on a later turn of the event loop, as a database would: outcomes recorded meanwhile wait. */
  private async check(ids: string[]): Promise<void> {
    await new Promise(setImmediate);
    const err = this.refuse(ids);
    if (err !== undefined) throw err;
  }

  async complete(ids: string[], _tokens: string[], reports?: { results: Array<string | null> }) {
    this.calls.push(reports ? { op: 'complete', ids, results: reports.results } : { op: 'complete', ids });
    await this.check(ids);
    return new Set(ids.filter((id) => this.fenced.has(id)));
  }

  async fail(rows: Failures) {
    this.calls.push({ op: 'fail', rows });
    await this.check(rows.ids);
    return rows.ids
      .filter((id) => !this.fenced.has(id))
      .map((id, i) => ({
        id,
        status: rows.permanent[i] || this.dead.has(id) ? ('failed' as const) : ('pending' as const),
      }));
  }

  async release(jobs: Fence[]) {
    const ids = jobs.map((j) => j.id);
    this.calls.push({ op: 'release', ids });
    await this.check(ids);
    return ids.filter((id) => !this.fenced.has(id));
  }

  async snooze(rows: Snoozes) {
    this.calls.push({ op: 'snooze', rows });
    await this.check(rows.ids);
    return rows.ids
      .filter((id) => !this.fenced.has(id))
      .map((id) =>
        this.dead.has(id)
          ? { id, status: 'failed' as const, error: 'TooManySnoozes: snoozed 3 times (jobs.maxSnoozes)' }
          : { id, status: 'pending' as const, error: null },
      );
  }

  async sleep(rows: Sleeps) {
    this.calls.push({ op: 'sleep', rows });
    await this.check(rows.ids);
    return rows.ids.filter((id) => !this.fenced.has(id)).map((id) => ({ id, wakeMs: 1000 }));
  }

  async park(rows: Waits) {
    this.calls.push({ op: 'park', rows });
    await this.check(rows.ids);
    return rows.ids
      .filter((id) => !this.fenced.has(id))
      .map((id) => ({ id, status: 'waiting' as const, deadlineMs: 2000 }));
  }

  async deadLetter(job: Fence, lastError: string) {
    this.calls.push({ op: 'deadLetter', id: job.id, lastError });
    await new Promise(setImmediate);
    const err = this.refuseFallback(job.id);
    if (err !== undefined) throw err;
    return !this.fenced.has(job.id);
  }

  ops(): string[] {
    return this.calls.map((c) => c.op);
  }
}

function job(id: number, attempt = 1, maxAttempts = 3): ClaimedJob {
  return {
    id: String(id),
    token: `t${id}`,
    kind: 'k',
    queue: 'default',
    payload: '{}',
    payloadBytes: null,
    payloadStoredBytes: null,
    attempt,
    maxAttempts,
    runAtMs: 0,
  };
}

const failure = (error = 'Error: boom', extra: Partial<Failure> = {}): Failure => ({
  runMs: 5,
  error,
  permanent: false,
  retryInMs: null,
  ...extra,
});

/** A completer on a fake store, with every event it emits collected by name. */
function harness(batchSize = 100) {
  const store = new FakeStore();
  const events = new SupervisorEvents();
  const completer = new Completer(
    store,
    { backoff: { base: 1000, max: 60_000, jitter: 0 }, completer: { flushInterval: 1, batchSize } },
    events,
  );
  const seen: Record<string, string[][]> = {};
  for (const name of [
    'job:completed',
    'job:retried',
    'job:dead',
    'job:snoozed',
    'job:slept',
    'job:waiting',
    'job:fenced',
  ] as const)
    events.on(name, (b: { jobs: JobRef[] }) => (seen[name] ??= []).push(b.jobs.map((j) => j.id)));
  const released: Array<{ ids: string[]; reason: string }> = [];
  events.on('job:released', (b) => released.push({ ids: b.jobs.map((j) => j.id), reason: b.reason }));
  const dbErrors: unknown[] = [];
  events.on('db:error', ({ err }) => dbErrors.push(err));
  /** Records the outcomes, then writes what is queued (retrying until written or 2 s passed). */
  async function runOnce(...outcomes: Array<[ClaimedJob, Recorded]>): Promise<void> {
    for (const [j, o] of outcomes) completer.record(j, o);
    await completer.flush(Date.now() + 2000);
  }
  return { store, events, completer, seen, released, dbErrors, runOnce };
}

// These tests must not reach PostgreSQL: a connection attempt fails the test that made it.
const connect = Object.getOwnPropertyDescriptor(pg.Client.prototype, 'connect') as PropertyDescriptor;
before(() => {
  Object.defineProperty(pg.Client.prototype, 'connect', {
    ...connect,
    value: () => {
      throw new Error('a completer unit test opened a PostgreSQL connection');
    },
  });
});
after(() => {
  Object.defineProperty(pg.Client.prototype, 'connect', connect);
});

describe('the completer, against a fake store', () => {
  it('writes done runs as one statement, holding their claims until it returns', async () => {
    const { store, completer, seen, runOnce } = harness();
    completer.record(job(1), { type: 'done', runMs: 3 });
    completer.record(job(2), { type: 'done', runMs: 4, report: { result: '"ok"' } });
    completer.record(job(3), { type: 'done', runMs: 5 });
    assert.deepEqual(
      completer.fences().map((f) => f.token),
      ['t1', 't2', 't3'],
    );
    await runOnce();
    assert.deepEqual(store.calls, [{ op: 'complete', ids: ['1', '2', '3'], results: [null, '"ok"', null] }]);
    assert.deepEqual(seen['job:completed'], [['1', '2', '3']]);
    assert.equal(completer.size, 0);
  });

  it('cuts a batch into statements of batchSize rows', async () => {
    const { store, runOnce } = harness(10);
    await runOnce(
      ...Array.from({ length: 25 }, (_, i): [ClaimedJob, Recorded] => [job(i), { type: 'done', runMs: 1 }]),
    );
    assert.deepEqual(
      store.calls.map((c) => (c.op === 'complete' ? c.ids.length : -1)),
      [10, 10, 5],
    );
  });

  it('reports a row refused through the fence as fenced, never as completed', async () => {
    const { store, completer, seen, runOnce } = harness();
    store.fenced.add('2');
    await runOnce([job(1), { type: 'done', runMs: 1 }], [job(2), { type: 'done', runMs: 1 }]);
    assert.deepEqual(seen['job:completed'], [['1']]);
    assert.deepEqual(seen['job:fenced'], [['2']]);
    assert.equal(completer.size, 0);
  });

  it('writes retries and dead letters in one failed statement; the store decides which each is', async () => {
    const { store, seen, runOnce } = harness();
    store.dead.add('2'); // out of attempts by the row's max_attempts
    await runOnce(
      [job(1, 1), { type: 'retry', failure: failure() }],
      [job(2, 3), { type: 'dead', failure: failure() }],
      [job(3, 2), { type: 'dead', failure: failure('Error: no', { permanent: true }) }],
      [job(4, 2), { type: 'retry', failure: failure('Error: later', { retryInMs: 1e16 }) }],
    );
    assert.deepEqual(store.ops(), ['fail']);
    const [call] = store.calls;
    assert.ok(call?.op === 'fail', `expected op fail, got ${call?.op}`);
    assert.deepEqual(call.rows.ids, ['1', '2', '3', '4']);
    assert.deepEqual(call.rows.permanent, [false, false, true, false]);
    // The backoff (base 1 s, no jitter) of each attempt, and a task's own delay clamped to a year.
    assert.deepEqual(call.rows.delaysMs, [1000, 4000, 2000, 365 * 24 * 3600 * 1000]);
    assert.deepEqual(seen['job:retried'], [['1', '4']]);
    assert.deepEqual(seen['job:dead'], [['2', '3']]);
  });

  it('splits a failing statement until the one bad row is alone, and dead-letters it by itself', async () => {
    const { store, seen, runOnce } = harness();
    const outOfRange = Object.assign(new Error('value out of range'), { code: '22003' });
    store.refuse = (ids) => (ids.includes('7') ? outOfRange : undefined);
    await runOnce(
      ...Array.from({ length: 16 }, (_, i): [ClaimedJob, Recorded] => [job(i), { type: 'retry', failure: failure() }]),
    );
    const written = store.calls.flatMap((c) => (c.op === 'fail' && !c.rows.ids.includes('7') ? c.rows.ids : []));
    assert.deepEqual(
      written.sort((a, b) => Number(a) - Number(b)),
      [...Array.from({ length: 16 }, (_, i) => String(i)).filter((id) => id !== '7')],
    );
    const fallback = store.calls.filter((c) => c.op === 'deadLetter');
    assert.equal(fallback.length, 1);
    assert.ok(fallback[0]?.op === 'deadLetter', `expected op deadLetter, got ${fallback[0]?.op}`);
    assert.equal(fallback[0].id, '7');
    assert.match(
      fallback[0].lastError,
      /^the job failed \(Error: boom\), and recording that failed \(value out of range\), so it was dead-lettered alone$/,
    );
    // 1 whole + 2·log2(16) halves, once.
    assert.equal(store.calls.filter((c) => c.op === 'fail').length, 9);
    assert.deepEqual(seen['job:dead'], [['7']]);
    assert.equal(seen['job:retried']?.flat().length, 15);
  });

  it('keeps a batch whole after an error that says nothing about its rows, and writes it again', async () => {
    const { store, completer, seen, dbErrors, runOnce } = harness();
    let lost = true;
    store.refuse = () => {
      if (!lost) return undefined;
      lost = false;
      return Object.assign(new Error('Connection terminated unexpectedly'), { code: '08006' });
    };
    completer.record(job(1), { type: 'done', runMs: 1 });
    completer.record(job(2), { type: 'done', runMs: 1 });
    await runOnce();
    assert.deepEqual(store.calls, [
      { op: 'complete', ids: ['1', '2'] },
      { op: 'complete', ids: ['1', '2'] },
    ]);
    assert.equal(dbErrors.length, 1);
    assert.deepEqual(seen['job:completed'], [['1', '2']]);
    assert.equal(completer.size, 0);
  });

  it('lets a row go when even its fallback is refused: the reaper takes it after its lease', async () => {
    const { store, completer, dbErrors, runOnce } = harness();
    store.refuse = () => Object.assign(new Error('bad row'), { code: '22003' });
    store.refuseFallback = () => Object.assign(new Error('trigger says no'), { code: 'P0001' });
    await runOnce([job(1), { type: 'done', runMs: 1 }]);
    assert.deepEqual(store.ops(), ['complete', 'deadLetter']);
    assert.equal(completer.size, 0);
    assert.equal((dbErrors[0] as Error).message, 'trigger says no');
  });

  it('hands released jobs back in one statement, announced once per reason', async () => {
    const { store, released, runOnce } = harness();
    await runOnce(
      [job(1), { type: 'release', reason: 'queue paused' }],
      [job(2), { type: 'release', reason: 'aborted by shutdown' }],
      [job(3), { type: 'release', reason: 'queue paused' }],
    );
    assert.deepEqual(store.calls, [{ op: 'release', ids: ['1', '2', '3'] }]);
    assert.deepEqual(released, [
      { ids: ['1', '3'], reason: 'queue paused' },
      { ids: ['2'], reason: 'aborted by shutdown' },
    ]);
  });

  it('puts snoozes back, and reports one past jobs.maxSnoozes as dead', async () => {
    const { store, seen, runOnce } = harness();
    store.dead.add('2');
    await runOnce(
      [job(1), { type: 'snooze', runMs: 2, delayMs: 1500.4 }],
      [job(2), { type: 'snooze', runMs: 2, delayMs: -5 }],
    );
    const [call] = store.calls;
    assert.ok(call?.op === 'snooze', `expected op snooze, got ${call?.op}`);
    assert.deepEqual(call.rows.delaysMs, [1500, 0]);
    assert.deepEqual(seen['job:snoozed'], [['1']]);
    assert.deepEqual(seen['job:dead'], [['2']]);
  });

  it('writes sleeps and waits with their names and times, each kind in its own statement', async () => {
    const { store, seen, completer, runOnce } = harness();
    store.fenced.add('3');
    const park = (kind: 'sleep' | 'wait', name: string, untilMs: number | null, delayMs: number) => ({
      type: kind,
      runMs: 2,
      park: { kind, name, untilMs, delayMs },
    });
    await runOnce(
      [job(1), park('sleep', 'nap', null, 5000)],
      [job(2), park('wait', 'approved', 1_700_000_000_000, 0)],
      [job(3), park('sleep', 'again', 1_700_000_000_000, 0)],
    );
    const sleep = store.calls.find((c) => c.op === 'sleep');
    const wait = store.calls.find((c) => c.op === 'park');
    assert.deepEqual(sleep?.op === 'sleep' && sleep.rows, {
      ids: ['1', '3'],
      tokens: ['t1', 't3'],
      names: ['nap', 'again'],
      untilMs: [null, 1_700_000_000_000],
      delaysMs: [5000, 0],
    });
    assert.deepEqual(wait?.op === 'park' && wait.rows, {
      ids: ['2'],
      tokens: ['t2'],
      names: ['approved'],
      untilMs: [1_700_000_000_000],
      timeoutsMs: [0],
    });
    assert.deepEqual(seen['job:slept'], [['1']]);
    assert.deepEqual(seen['job:waiting'], [['2']]);
    assert.deepEqual(seen['job:fenced'], [['3']], 'a sleep refused through the fence is reported fenced');
    assert.equal(completer.size, 0);
  });

  it('writes every kind of outcome side by side in one write', async () => {
    const { store, runOnce } = harness();
    await runOnce(
      [job(1), { type: 'done', runMs: 1 }],
      [job(2), { type: 'retry', failure: failure() }],
      [job(3), { type: 'release', reason: 'queue paused' }],
      [job(4), { type: 'snooze', runMs: 1, delayMs: 10 }],
    );
    assert.deepEqual(store.ops(), ['complete', 'fail', 'release', 'snooze']);
  });
});
