/**
 * Fuzz: enqueue and enqueueMany with random and hostile input (seeded; the
 * seed is printed and FUZZ_SEED replays it). Every case ends one of two ways:
 *   - refused with InputError (code INPUT_INVALID, one line), before anything
 *     reaches the database: the caller's transaction is still usable and
 *     nothing was written — for a batch, not one row of it;
 *   - stored exactly: the row reads back as JSON.parse(JSON.stringify(input)).
 * Anything else (a database error, a crash, a refused legal value, a stored
 * illegal one) is a failure. Afterwards a supervisor runs the stored hostile
 * payloads and the task sees exactly what was stored.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type pg from 'pg';
import { InputError } from '../../src/errors.ts';
import { COPY_THRESHOLD, enqueue, enqueueMany, type EnqueueOptions, type JobSpec } from '../../src/queue/enqueue.ts';
import {
  int,
  nested,
  notJson,
  pick,
  randomJson,
  randomString,
  UNSTORABLE_STRINGS,
  type Random,
} from '../helpers/chaos/hostile.ts';
import { count, prng, report, until } from '../helpers/chaos/measure.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startSupervisor, testSettings } from '../helpers/inprocess.ts';

const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);
const CASES = 600;
const BATCHES = 60;

let db: TestDatabase;

before(async () => {
  db = await createTestDatabase('fuzz_enqueue');
  await db.pool.query('CREATE TABLE chaos_echo (job_id bigint PRIMARY KEY, payload jsonb)');
});

after(async () => {
  await db.drop();
});

/** True when `value` holds text PostgreSQL cannot store (NUL, lone surrogates), in a key or a string. */
function unstorable(value: unknown, seen = new Set<unknown>()): boolean {
  if (typeof value === 'string') return value.includes('\u0000') || !value.isWellFormed();
  if (typeof value !== 'object' || value === null || seen.has(value)) return false;
  seen.add(value);
  if (Array.isArray(value)) return value.some((v) => unstorable(v, seen));
  return Object.entries(value).some(([k, v]) => unstorable(k, seen) || unstorable(v, seen));
}

/**
 * True when JSON.stringify would change `value` beyond leaving out undefined
 * fields: it holds a function, or an object that is not plain (a Map, a Set,
 * a class instance, or one whose prototype an assignment to a "__proto__" key
 * replaced). enqueue refuses such a value, naming where.
 */
function changedByJson(value: unknown, seen = new Set<unknown>()): boolean {
  if (typeof value === 'function') return true;
  if (typeof value !== 'object' || value === null || seen.has(value)) return false;
  seen.add(value);
  if (value instanceof Date) return false;
  if (Array.isArray(value)) return value.some((v) => changedByJson(v, seen));
  const proto = Object.getPrototypeOf(value) as object | null;
  if (proto !== null && proto !== Object.prototype) return true;
  return Object.values(value).some((v) => changedByJson(v, seen));
}

interface Case {
  kind: string;
  payload: unknown;
  options: EnqueueOptions;
  /** Every part is legal: it must be stored. */
  legal: boolean;
  /** Some part is illegal: it must be refused. */
  illegal: boolean;
  note: string;
}

/** Options: mostly legal, sometimes hostile. */
function randomOptions(random: Random): { options: EnqueueOptions; legal: boolean; illegal: boolean } {
  const options: Record<string, unknown> = {};
  let legal = true;
  let illegal = false;
  const hostile = (value: unknown, isIllegal: boolean) => {
    legal = false;
    illegal ||= isIllegal;
    return value;
  };
  // A dot in a queue name is refused: configuration keys are dotted paths, so such a
  // queue could be enqueued to but never configured, and its jobs would never run.
  if (random() < 0.3)
    options.queue =
      random() < 0.7
        ? pick(random, ['default', 'q_1', 'Q:2', 'a-b_c'])
        : hostile(pick(random, ['', ' ', 'x y', "q'", '-q', 'q'.repeat(201), 'q.1', 5, '漢字']), true);
  if (random() < 0.3)
    options.priority =
      random() < 0.7
        ? int(random, -1_000_000, 1_000_000)
        : hostile(
            pick(random, [
              1.5,
              Number.NaN,
              '5',
              '5\n6',
              1_000_001,
              -1e9,
              Number.POSITIVE_INFINITY,
              true,
              {},
              Object.create(null),
            ]),
            true,
          );
  if (random() < 0.3)
    options.maxAttempts =
      random() < 0.7
        ? int(random, 1, 1000)
        : hostile(pick(random, [0, -1, 1001, 2.5, '3', Number.NaN, Object.create(null)]), true);
  const when = random();
  if (when < 0.15)
    options.runAt =
      random() < 0.6
        ? pick(random, [
            '2030-01-01T00:00:00Z',
            '2030-06-15',
            new Date(Date.now() + 60_000),
            '2031-02-03T04:05:06.789+05:30',
          ])
        : hostile(
            pick(random, [
              'tomorrow',
              '',
              '1969-12-31T23:59:59Z',
              '10000-01-01T00:00:00Z',
              12345,
              {},
              Object.create(null),
              new Date(Number.NaN),
              '2030-01-01T00:00:00Z\nX',
            ]),
            true,
          );
  else if (when < 0.3)
    options.delay =
      random() < 0.6
        ? pick(random, ['10s', '500ms', 1000, '1d', 0])
        : hostile(
            pick(random, ['soon', '-5s', -1, '1e400s', '11y', Number.NaN, 'NaN', {}, Object.create(null), '1\n2']),
            true,
          );
  if (random() < 0.3) {
    if (random() < 0.7) options.uniqueKey = `k-${randomString(random)}-${random()}`.slice(0, 1000);
    else options.uniqueKey = hostile(pick(random, ['', 'k'.repeat(1001), 5, ['a'], ...UNSTORABLE_STRINGS]), true);
  }
  return { options, legal, illegal };
}

function randomCase(random: Random): Case {
  const o = randomOptions(random);
  let kind = 'chaos_echo';
  let kindLegal = true;
  if (random() < 0.1) {
    kind = pick(random, [
      '',
      'a b',
      "x'; DROP TABLE jobvisor.jobs; --",
      '.x',
      'k'.repeat(201),
      'é',
      '\u0000',
      'ok_kind',
      'a:b.c-d',
    ]);
    kindLegal = /^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,199}$/.test(kind);
  }
  const p = random();
  let payload: unknown;
  let note: string;
  let payloadLegal: boolean | null;
  if (p < 0.6) {
    payload = randomJson(random, 4, true);
    note = 'random json';
    payloadLegal = !unstorable(payload) && !changedByJson(payload);
  } else if (p < 0.7) {
    payload = notJson(random);
    note = 'not json';
    payloadLegal = false;
  } else if (p < 0.75) {
    payload = nested(random() < 0.5 ? 100 : 101);
    note = 'deep';
    payloadLegal = null; // the limit is the library's to set: either answer is fine, but consistently
  } else if (p < 0.8) {
    payload = { blob: 'x'.repeat(random() < 0.5 ? 1024 * 1024 - 20 : 1024 * 1024 + 1) };
    note = 'large';
    payloadLegal = JSON.stringify(payload).length <= 1024 * 1024;
  } else if (p < 0.9) {
    const text = randomString(random, true);
    payload = { at: new Date(0), custom: { toJSON: () => text } };
    note = 'toJSON';
    payloadLegal = !unstorable(text);
  } else if (p < 0.95) {
    payload = pick(random, [null, 0, 'plain string', [], true, { a: undefined }, Object.create(null)]);
    note = 'top-level oddity';
    payloadLegal = true;
  } else {
    // What JSON.stringify would silently turn into something else.
    class Point {
      constructor(readonly x: number) {}
    }
    const reparented: Record<string, unknown> = {};
    reparented['__proto__'] = { inherited: 1 };
    payload = pick(random, [
      { a: 1, b: () => 1 },
      new Map([[1, 2]]),
      { tags: new Set(['a']) },
      [new Point(1)],
      { user: reparented },
    ]);
    note = 'changed by JSON';
    payloadLegal = false;
  }
  return {
    kind,
    payload,
    options: o.options,
    note,
    legal: o.legal && kindLegal && payloadLegal === true,
    illegal: o.illegal || !kindLegal || payloadLegal === false,
  };
}

const stored = new Set<string>();

/** What a failing case looked like, short enough for an assertion message. */
function describeCase(c: Case): string {
  const show = (v: unknown) => {
    try {
      return (JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? `${x}n` : x)) ?? String(v)).slice(0, 160);
    } catch {
      return '[unserialisable]';
    }
  };
  return `${c.note}: kind=${show(c.kind)} options=${show(c.options)} payload=${show(c.payload)}`;
}

async function readBack(client: pg.PoolClient, id: string) {
  return (
    await client.query(
      'SELECT kind, queue, priority, max_attempts, unique_key, payload::text AS payload FROM jobvisor.jobs WHERE id = $1',
      [id],
    )
  ).rows[0];
}

describe('fuzz: enqueue and enqueueMany', () => {
  it(`enqueue: ${CASES} random and hostile jobs are refused cleanly or stored exactly (seed ${SEED})`, async () => {
    const random = prng(SEED);
    const failures: string[] = [];
    let refused = 0;
    let accepted = 0;
    const client = await db.pool.connect();
    try {
      for (let i = 0; i < CASES; i++) {
        const c = randomCase(random);
        await client.query('BEGIN');
        const before = Number((await client.query('SELECT count(*) AS n FROM jobvisor.jobs')).rows[0].n);
        try {
          const result = await enqueue(client, c.kind, c.payload as never, c.options);
          accepted++;
          if (c.illegal) failures.push(`#${i} stored although illegal: ${describeCase(c)}`);
          if (!result.duplicate) {
            const row = await readBack(client, result.id);
            const expected = JSON.parse(JSON.stringify(c.payload) ?? 'null');
            try {
              assert.deepEqual(JSON.parse(row.payload), expected);
              assert.equal(row.kind, c.kind);
              assert.equal(row.queue, c.options.queue ?? 'default');
              assert.equal(row.priority, c.options.priority ?? 0);
              assert.equal(row.unique_key, c.options.uniqueKey ?? null);
            } catch (err) {
              failures.push(`#${i} stored differently (${(err as Error).message.split('\n')[0]}): ${describeCase(c)}`);
            }
          }
          await client.query('COMMIT');
          if (!result.duplicate && c.kind === 'chaos_echo') stored.add(result.id);
        } catch (err) {
          if (!(err instanceof InputError)) {
            failures.push(
              `#${i} ${(err as Error).name} instead of InputError (${(err as { code?: string }).code ?? ''} ${(err as Error).message.split('\n')[0]}): ${describeCase(c)}`,
            );
            await client.query('ROLLBACK').catch(() => {});
            continue;
          }
          refused++;
          if (c.legal) failures.push(`#${i} refused although legal (${err.message}): ${describeCase(c)}`);
          if (err.code !== 'INPUT_INVALID') failures.push(`#${i} InputError without its code`);
          if (/[\r\n]/.test(err.message)) failures.push(`#${i} message spans lines: ${JSON.stringify(err.message)}`);
          // The caller's transaction is untouched: it still runs statements, and nothing was added.
          try {
            const after = Number((await client.query('SELECT count(*) AS n FROM jobvisor.jobs')).rows[0].n);
            if (after !== before) failures.push(`#${i} refused but wrote ${after - before} rows`);
          } catch (e) {
            failures.push(
              `#${i} refused, and the caller's transaction was aborted (${(e as Error).message}): ${describeCase(c)}`,
            );
          }
          await client.query('ROLLBACK');
        }
      }
    } finally {
      client.release();
    }
    report('fuzz.enqueue', {
      seed: SEED,
      cases: CASES,
      accepted,
      refused,
      failures: failures.length,
      firstFailures: failures.slice(0, 5),
    });
    assert.deepEqual(failures.slice(0, 10), [], `${failures.length} failing cases (FUZZ_SEED=${SEED})`);
  });

  it(`enqueueMany: ${BATCHES} batches (some through COPY) are all-or-nothing and name the first bad job (seed ${SEED})`, async () => {
    const random = prng(SEED + 1);
    const failures: string[] = [];
    let copyBatches = 0;
    for (let b = 0; b < BATCHES; b++) {
      // Every tenth batch is big (COPY): drawn at random, 60 batches held none about once in 500
      // seeds (seed 312121), and the check below that some went through COPY failed.
      const big = b % 10 === 3;
      const size = big ? COPY_THRESHOLD + int(random, 0, 200) : int(random, 1, 30);
      const jobs: JobSpec[] = [];
      let firstBad = -1;
      for (let i = 0; i < size; i++) {
        // Batches through COPY must carry no unique key; the rest may.
        const c = randomCase(random);
        if (big) delete c.options.uniqueKey;
        const spoil = random() < 0.3 / size;
        const job: JobSpec = spoil
          ? { kind: 'chaos_echo', payload: { bad: pick(random, UNSTORABLE_STRINGS) } }
          : c.legal
            ? { kind: c.kind, payload: c.payload, ...c.options }
            : { kind: 'chaos_echo', payload: randomJson(random, 3) };
        if (spoil && firstBad < 0) firstBad = i;
        jobs.push(job);
      }
      if (big && firstBad < 0) copyBatches++;
      const before = await count(db.pool, 'SELECT count(*)::int AS n FROM jobvisor.jobs');
      try {
        const results = await enqueueMany(db.pool, jobs);
        if (firstBad >= 0) failures.push(`batch ${b}: stored although jobs[${firstBad}] is illegal`);
        const ids = results.filter((r) => !r.duplicate).map((r) => r.id);
        const rows = new Map(
          (
            await db.pool.query('SELECT id, payload::text AS payload FROM jobvisor.jobs WHERE id = ANY($1)', [ids])
          ).rows.map((r) => [String(r.id), r.payload as string]),
        );
        results.forEach((r, i) => {
          if (r.duplicate) return;
          const text = rows.get(r.id);
          if (text === undefined) failures.push(`batch ${b}: jobs[${i}] reported as ${r.id} but not stored`);
          else {
            try {
              const given = jobs[i]?.payload;
              assert.deepEqual(
                JSON.parse(text),
                JSON.parse(JSON.stringify(given === undefined ? {} : given) ?? 'null'),
              );
            } catch {
              failures.push(`batch ${b}${big ? ' (COPY)' : ''}: jobs[${i}] stored differently: ${text.slice(0, 120)}`);
            }
          }
          if (jobs[i]?.kind === 'chaos_echo') stored.add(r.id);
        });
      } catch (err) {
        if (!(err instanceof InputError))
          failures.push(
            `batch ${b}${big ? ' (COPY)' : ''}: ${(err as Error).name} instead of InputError: ${(err as Error).message.split('\n')[0]}`,
          );
        else if (firstBad < 0) failures.push(`batch ${b}: refused although legal: ${err.message}`);
        else if (!err.message.startsWith(`jobs[${firstBad}].`))
          failures.push(`batch ${b}: message does not name jobs[${firstBad}]: ${err.message}`);
        const after = await count(db.pool, 'SELECT count(*)::int AS n FROM jobvisor.jobs');
        if (after !== before) failures.push(`batch ${b}: refused but ${after - before} of ${size} rows written`);
      }
    }
    report('fuzz.enqueueMany', {
      seed: SEED,
      batches: BATCHES,
      copyBatches,
      failures: failures.length,
      firstFailures: failures.slice(0, 5),
    });
    assert.ok(copyBatches > 0, 'some batches went through COPY');
    assert.deepEqual(failures.slice(0, 10), [], `${failures.length} failing batches (FUZZ_SEED=${SEED})`);
  });

  it('stored hostile payloads run as data: the task receives exactly what was stored', async () => {
    const ids = [...stored];
    assert.ok(ids.length > 100, `enough stored cases (${ids.length})`);
    // Delayed ones are made due now; the rest of each row is left as stored.
    await db.pool.query("UPDATE jobvisor.jobs SET run_at = now() WHERE id = ANY($1) AND status = 'pending'", [ids]);
    const queues = (
      await db.pool.query<{ queue: string }>('SELECT DISTINCT queue FROM jobvisor.jobs WHERE id = ANY($1)', [ids])
    ).rows.map((r) => r.queue);
    // Every queue a job could be enqueued to must be one a supervisor can be configured to serve.
    const unservable: string[] = [];
    for (const q of queues) {
      try {
        testSettings({ queues: { [q]: { concurrency: 1 } } });
      } catch (err) {
        unservable.push(`${q}: ${(err as Error).message}`);
      }
    }
    const servable = queues.filter((q) => !unservable.some((u) => u.startsWith(`${q}: `)));
    const served = (
      await db.pool.query<{ id: string }>('SELECT id FROM jobvisor.jobs WHERE id = ANY($1) AND queue = ANY($2)', [
        ids,
        servable,
      ])
    ).rows.map((r) => r.id);
    const supervisor = startSupervisor(db.url, {
      queues: Object.fromEntries(servable.map((q) => [q, { concurrency: 20, jobsPerThread: 20 }])),
      pool: { maxThreads: 2 },
    });
    await supervisor.start();
    try {
      await until(
        'every stored job done',
        () =>
          count(db.pool, "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = 'done'", [
            served,
          ]),
        (n) => n === served.length,
        60_000,
        100,
      );
    } finally {
      await supervisor.stop();
    }
    const mismatched = await count(
      db.pool,
      'SELECT count(*)::int AS n FROM jobvisor.jobs j LEFT JOIN chaos_echo e ON e.job_id = j.id WHERE j.id = ANY($1) AND e.payload IS DISTINCT FROM j.payload',
      [served],
    );
    report('fuzz.run-as-data', { jobs: ids.length, ran: served.length, mismatched, unservableQueues: unservable });
    assert.equal(mismatched, 0, 'every task saw its payload exactly');
    assert.deepEqual(unservable, [], 'jobs were accepted into queues no supervisor can serve');
  });
});
