/**
 * The per-minute rollup of finished jobs (src/queue/finished_rollup.ts) and
 * its readers against a real PostgreSQL: the charts and the done count of the
 * last hour read the same before and after rollups; concurrent rollups never
 * count a minute twice, and one that finds the watermark locked does nothing;
 * catch-up goes a chunk per statement; rows of the last seconds stay in the
 * tail; old minutes are deleted; a supervisor's cleanup round rolls up before
 * it deletes.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import pg from 'pg';
import { overview, throughput } from '../../src/queue/admin/index.ts';
import { deleteOldMinutes, ROLLUP_CHUNK_MS, rollUpFinished } from '../../src/queue/finished_rollup.ts';
import type { Store } from '../../src/queue/sql.ts';
import { rollUpRound } from '../../src/supervisor/loops/maintenance.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startSupervisor } from '../helpers/inprocess.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

let db: TestDatabase;
let store: Store;

before(async () => {
  db = await createTestDatabase('finished_rollup');
  store = { db: db.pool, schema: 'jobvisor' };
});
beforeEach(async () => {
  await db.pool.query('TRUNCATE jobvisor.jobs, jobvisor.finished_minutes');
});
after(async () => {
  await db.drop();
});

interface Finished {
  queue: string;
  status: 'done' | 'failed' | 'cancelled';
  at: Date;
}

async function insertFinished(rows: Finished[]): Promise<void> {
  await db.pool.query(
    `INSERT INTO jobvisor.jobs (kind, queue, status, finished_at)
     SELECT 'k', q, s, f FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS r(q, s, f)`,
    [rows.map((r) => r.queue), rows.map((r) => r.status), rows.map((r) => r.at)],
  );
}

/** Sets the watermark to `upto`, or to the start of this minute (the database's clock) less `minutesAgo`. */
async function setWatermark(upto: Date | { minutesAgo: number }): Promise<void> {
  if (upto instanceof Date) await db.pool.query('UPDATE jobvisor.finished_rollup SET upto = $1', [upto]);
  else
    await db.pool.query(
      `UPDATE jobvisor.finished_rollup
          SET upto = date_bin('1 minute', now(), timestamptz '1970-01-01 00:00:00+00') - $1::int * interval '1 minute'`,
      [upto.minutesAgo],
    );
}

async function watermark(): Promise<Date> {
  const { rows } = await db.pool.query<{ upto: Date }>('SELECT upto FROM jobvisor.finished_rollup');
  return rows[0]!.upto;
}

/** finished_minutes as `minute queue done/failed/cancelled` lines, in order. */
async function minutes(): Promise<string[]> {
  const { rows } = await db.pool.query<{ line: string }>(
    `SELECT to_char(minute AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI') || ' ' || queue || ' ' || sum(done) || '/' || sum(failed) || '/' || sum(cancelled) AS line
       FROM jobvisor.finished_minutes GROUP BY minute, queue ORDER BY minute, queue`,
  );
  return rows.map((r) => r.line);
}

/** The same lines counted from jobs directly, for the rows before `upto`. */
async function expectedMinutes(since: Date, upto: Date): Promise<string[]> {
  const { rows } = await db.pool.query<{ line: string }>(
    `SELECT to_char(m AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI') || ' ' || queue || ' ' ||
            count(*) FILTER (WHERE status = 'done') || '/' || count(*) FILTER (WHERE status = 'failed') || '/' ||
            count(*) FILTER (WHERE status = 'cancelled') AS line
       FROM (SELECT date_bin('1 minute', finished_at, timestamptz '1970-01-01 00:00:00+00') AS m, queue, status
               FROM jobvisor.jobs WHERE status IN ('done', 'failed', 'cancelled') AND finished_at >= $1 AND finished_at < $2) x
      GROUP BY m, queue ORDER BY m, queue`,
    [since, upto],
  );
  return rows.map((r) => r.line);
}

/** What the Overview shows about finished jobs at `now`. */
async function readers(now: Date) {
  const o = await overview(store, now);
  return {
    hour: await throughput(store, 'hour', now),
    day: await throughput(store, 'day', now),
    doneLastHour: Object.fromEntries(o.queues.map((q) => [q.queue, q.doneLastHour])),
  };
}

/** Rollup statements at `now` until caught up; returns how many ran. */
async function catchUp(now: Date): Promise<number> {
  for (let n = 1; n <= 1000; n++) {
    const step = await rollUpFinished(store, { now });
    assert.ok(step, 'nobody else holds the watermark');
    if (step.caughtUp) return n;
  }
  throw new Error('the rollup did not catch up in 1,000 statements');
}

describe('the per-minute rollup and its readers', () => {
  // A pinned clock: 30 s into a minute, so the minute of now − 1 hour is half inside the hour.
  const now = new Date('2030-01-01T12:00:30Z');
  const ago = (ms: number) => new Date(now.getTime() - ms);
  const dayAgo = new Date('2029-12-31T12:00:00Z');

  it('gives the same chart and done counts before and after rollups; the last seconds stay in the tail', async () => {
    await setWatermark(dayAgo);
    const offsets = [
      3_000, // under 10 s ago: not settled
      25_000, // the current minute
      40_000, // the minute before: settled 10 s after it ended
      90_000,
      10 * MINUTE,
      59 * MINUTE + 45_000,
      60 * MINUTE + 20_000, // in the minute that holds now − 1 hour: counted in the last hour
      61 * MINUTE, // before that minute
      3 * HOUR,
      20 * HOUR + 7_000,
      23 * HOUR + 50 * MINUTE, // before the day chart's first bucket
      25 * HOUR, // before the watermark
    ];
    const rows: Finished[] = [];
    offsets.forEach((offset, i) => {
      ['a', 'b', 'c'].forEach((queue, q) => {
        for (let n = 0; n < 1 + ((i + q) % 3); n++) rows.push({ queue, status: 'done', at: ago(offset + n) });
        if ((i + q) % 2 === 0) rows.push({ queue, status: 'failed', at: ago(offset) });
        if ((i + q) % 3 === 1) rows.push({ queue, status: 'cancelled', at: ago(offset) });
      });
    });
    await insertFinished(rows);
    const beforeRollup = await readers(now);
    assert.ok(beforeRollup.hour.some((b) => b.done > 0 && b.failed > 0));
    assert.ok(Object.values(beforeRollup.doneLastHour).every((n) => n > 0));

    const steps = await catchUp(now);
    assert.equal(steps, 96, 'a day from the watermark, 15 minutes a statement');
    assert.deepEqual(await watermark(), new Date('2030-01-01T12:00:00Z'), 'the last minute that ended 10 s ago');
    assert.deepEqual(await minutes(), await expectedMinutes(dayAgo, new Date('2030-01-01T12:00:00Z')));
    assert.ok((await minutes()).length > 20);
    assert.deepEqual(await readers(now), beforeRollup);

    // The rows of the current minute are read from jobs: counted, and not in the rollup.
    const { rows: recent } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM jobvisor.finished_minutes WHERE minute >= '2030-01-01T12:00:00Z'`,
    );
    assert.equal(recent[0]?.n, 0);
    const last = beforeRollup.hour.at(-1)!;
    assert.deepEqual(last.bucketStart, new Date('2030-01-01T12:00:00Z'));
    assert.ok(last.done >= 6, `the tail's rows are in the last bucket (${last.done})`);

    // A rolled-up minute is frozen; the tail reads rows as they are now.
    await db.pool.query(
      `UPDATE jobvisor.jobs SET status = 'pending', finished_at = NULL WHERE status = 'failed' AND finished_at >= $1`,
      [ago(90_000 + 1)],
    );
    const requeued = await readers(now);
    const failedAt = (r: typeof requeued, minute: string) =>
      r.hour.find((b) => b.bucketStart.toISOString() === minute)?.failed;
    assert.equal(failedAt(requeued, '2030-01-01T11:59:00.000Z'), failedAt(beforeRollup, '2030-01-01T11:59:00.000Z'));
    assert.ok((failedAt(beforeRollup, '2030-01-01T12:00:00.000Z') ?? 0) > 0);
    assert.equal(failedAt(requeued, '2030-01-01T12:00:00.000Z'), 0);

    // A second catch-up at the same time counts nothing again.
    assert.equal(await catchUp(now), 1);
    assert.deepEqual(await readers(now), requeued);
  });

  it('never caps the rolled-up done count: it is an exact sum', async () => {
    await setWatermark(dayAgo);
    await insertFinished(
      Array.from({ length: 5 }, (_, i) => ({ queue: 'a', status: 'done', at: ago(5 * MINUTE + i) })),
    );
    assert.equal((await overview(store, now, { cap: 2 })).capped, true, 'five live done rows read with a cap of 2');
    await catchUp(now);
    const o = await overview(store, now, { cap: 2 });
    assert.equal(o.capped, false);
    assert.equal(o.queues.find((q) => q.queue === 'a')?.doneLastHour, 5);
  });

  it('counts a chunk per statement when catching up, and skips what no reader looks at', async () => {
    await setWatermark(new Date(dayAgo.getTime() - 2 * DAY));
    // One done row a minute over the last three days.
    await insertFinished(
      Array.from({ length: 3 * 24 * 60 }, (_, i) => ({ queue: 'a', status: 'done', at: ago(i * MINUTE + 5_000) })),
    );
    const step = await rollUpFinished(store, { now });
    assert.deepEqual(step, {
      upto: new Date(dayAgo.getTime() + ROLLUP_CHUNK_MS),
      caughtUp: false,
      minutes: ROLLUP_CHUNK_MS / MINUTE,
    });
    const counted = await minutes();
    assert.equal(counted.length, 15);
    assert.equal(counted[0], '2029-12-31T12:00 a 1/0/0', 'the rows older than a day were skipped, not counted');
    assert.equal(counted.at(-1), '2029-12-31T12:14 a 1/0/0');
    const small = await rollUpFinished(store, { now, chunkMs: 2 * MINUTE });
    assert.deepEqual(small?.upto, new Date(dayAgo.getTime() + ROLLUP_CHUNK_MS + 2 * MINUTE));
    assert.equal((await minutes()).length, 17);
  });

  it('rounds stop at their deadline with minutes left, and catch up on the real clock', async () => {
    await setWatermark({ minutesAgo: 24 * 60 });
    const start = await watermark();
    const { rows: clock } = await db.pool.query<{ now: Date }>('SELECT now() AS now');
    const dbNow = clock[0]!.now.getTime();
    await insertFinished(
      Array.from({ length: 24 * 60 }, (_, i) => ({ queue: 'r', status: 'done', at: new Date(dbNow - i * MINUTE) })),
    );
    assert.equal(await rollUpRound(store, Date.now() - 1), 'more', 'one statement, then the deadline');
    assert.deepEqual(await watermark(), new Date(start.getTime() + ROLLUP_CHUNK_MS));
    assert.equal(await rollUpRound(store, Number.POSITIVE_INFINITY), 'done');
    const upto = await watermark();
    const settled = Math.floor((Date.now() - 10_000) / MINUTE) * MINUTE;
    assert.ok(upto.getTime() >= settled - MINUTE && upto.getTime() <= settled, `${upto.toISOString()}`);
    assert.deepEqual(await minutes(), await expectedMinutes(start, upto));
  });

  it('does nothing while another transaction holds the watermark', async () => {
    await setWatermark(dayAgo);
    await insertFinished([{ queue: 'a', status: 'done', at: ago(10 * MINUTE) }]);
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT upto FROM jobvisor.finished_rollup FOR UPDATE');
      assert.equal(await rollUpFinished(store, { now }), null);
      assert.deepEqual(await minutes(), []);
      await holder.query('COMMIT');
    } finally {
      await holder.end();
    }
    assert.deepEqual(await watermark(), dayAgo);
    assert.equal(await catchUp(now), 96);
    assert.deepEqual(await minutes(), ['2030-01-01T11:50 a 1/0/0']);
  });

  it('never counts a minute twice when rollups race', async (t) => {
    await setWatermark(dayAgo);
    const statuses = ['done', 'done', 'done', 'failed', 'cancelled'] as const;
    await insertFinished(
      Array.from({ length: 20_000 }, (_, i) => ({
        queue: `q${i % 4}`,
        status: statuses[i % statuses.length]!,
        at: ago(((i * 7919) % DAY) + 1),
      })),
    );
    const cap = new Date('2030-01-01T12:00:00Z');
    let skipped = 0;
    let steps = 0;
    const racer = async () => {
      for (let i = 0; i < 5000 && (await watermark()) < cap; i++) {
        const step = await rollUpFinished(store, { now, chunkMs: 5 * MINUTE });
        if (step === null) skipped++;
        else steps++;
      }
    };
    await Promise.all([racer(), racer(), racer(), racer()]);
    t.diagnostic(`${steps} rollup statements counted, ${skipped} found the watermark taken`);
    assert.deepEqual(await watermark(), cap);
    assert.deepEqual(await minutes(), await expectedMinutes(dayAgo, cap));
    const { rows } = await db.pool.query<{ n: number }>(
      'SELECT (sum(done) + sum(failed) + sum(cancelled))::int AS n FROM jobvisor.finished_minutes',
    );
    const { rows: kept } = await db.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM jobvisor.jobs WHERE finished_at >= $1 AND finished_at < $2',
      [dayAgo, cap],
    );
    assert.equal(rows[0]?.n, kept[0]?.n);
  });

  it('keeps finished_quarters equal to its minutes summed per quarter, whoever writes them', async () => {
    const quarters = async () =>
      (
        await db.pool.query<{ line: string }>(
          `SELECT quarter || ' ' || queue || ' ' || kind || ' ' || done || '/' || failed || '/' || cancelled AS line
             FROM jobvisor.finished_quarters ORDER BY 1`,
        )
      ).rows.map((r) => r.line);
    const summed = async () =>
      (
        await db.pool.query<{ line: string }>(
          `SELECT q || ' ' || queue || ' ' || kind || ' ' || sum(done) || '/' || sum(failed) || '/' || sum(cancelled) AS line
             FROM (SELECT date_bin('15 minutes', minute, timestamptz '1970-01-01 00:00:00+00') AS q, * FROM jobvisor.finished_minutes) AS m
            GROUP BY q, queue, kind ORDER BY 1`,
        )
      ).rows.map((r) => r.line);
    await setWatermark(dayAgo);
    await insertFinished(
      [1, 7, 14, 16, 40, 200, 900].flatMap((m) => [
        { queue: 'a', status: 'done' as const, at: ago(m * MINUTE) },
        { queue: 'b', status: 'failed' as const, at: ago(m * MINUTE) },
        { queue: 'a', status: 'cancelled' as const, at: ago(m * MINUTE + 1) },
      ]),
    );
    await catchUp(now);
    assert.ok((await quarters()).length >= 10);
    assert.deepEqual(await quarters(), await summed());
    // By hand: an insert, an update that moves a minute to another quarter, a delete.
    await db.pool.query(`INSERT INTO jobvisor.finished_minutes (minute, queue, kind, done) VALUES ($1, 'z', 'k', 5)`, [
      ago(3 * HOUR),
    ]);
    await db.pool.query(
      `UPDATE jobvisor.finished_minutes SET minute = minute - interval '1 hour', done = 7 WHERE queue = 'z'`,
    );
    await db.pool.query(`DELETE FROM jobvisor.finished_minutes WHERE queue = 'b' AND minute < $1`, [ago(HOUR)]);
    assert.deepEqual(await quarters(), await summed());
    assert.ok(!(await quarters()).some((l) => / z k 5\//.test(l)), 'the moved minute left its quarter');
    // Cleanup's delete of old minutes takes their quarters with them.
    const { rows: kept } = await db.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM jobvisor.finished_minutes',
    );
    assert.equal(await deleteOldMinutes(store, new Date(now.getTime() + 3 * DAY)), kept[0]?.n);
    assert.deepEqual(await quarters(), []);
    await insertFinished([{ queue: 'a', status: 'done', at: ago(5 * MINUTE) }]);
    await setWatermark(dayAgo);
    await catchUp(now);
    await db.pool.query('TRUNCATE jobvisor.finished_minutes');
    assert.deepEqual(await quarters(), []);
  });

  it('deletes minutes older than two days', async () => {
    await db.pool.query(
      `INSERT INTO jobvisor.finished_minutes (minute, queue, kind, done) VALUES ($1, 'a', 'k', 1), ($2, 'a', 'k', 2), ($3, 'a', 'k', 3)`,
      [new Date(now.getTime() - 3 * DAY), new Date(now.getTime() - 47 * HOUR), new Date(now.getTime() - HOUR)],
    );
    assert.equal(await deleteOldMinutes(store, now), 1);
    const { rows } = await db.pool.query<{ done: number }>(
      'SELECT done FROM jobvisor.finished_minutes ORDER BY minute',
    );
    assert.deepEqual(
      rows.map((r) => r.done),
      [2, 3],
    );
  });
});

describe("a supervisor's cleanup round", () => {
  it('rolls up the rows it is about to delete, and deletes old minutes', async () => {
    // Ten minutes behind: one rollup statement. (A watermark a day behind takes a few rounds
    // to catch up; rows past a retention this short could be deleted before their turn.)
    await setWatermark({ minutesAgo: 10 });
    const { rows: clock } = await db.pool.query<{ now: Date }>('SELECT now() AS now');
    const at = (ms: number) => new Date(clock[0]!.now.getTime() - ms);
    await insertFinished([
      ...Array.from({ length: 5 }, () => ({ queue: 'x', status: 'done' as const, at: at(5 * MINUTE) })),
      ...Array.from({ length: 3 }, () => ({ queue: 'x', status: 'failed' as const, at: at(3 * MINUTE) })),
    ]);
    await db.pool.query(`INSERT INTO jobvisor.finished_minutes (minute, queue, kind, done) VALUES ($1, 'x', 'k', 9)`, [
      new Date(Math.floor(at(3 * DAY).getTime() / MINUTE) * MINUTE),
    ]);
    const supervisor = startSupervisor(db.url, {
      cleanup: { interval: '2s', retention: '3s', failedRetention: '3s' },
      queues: { default: { concurrency: 1 } },
    });
    let deleted = 0;
    const gone = new Promise<void>((resolve) =>
      supervisor.events.on('jobs:cleaned', ({ rows }) => {
        deleted += rows.reduce((n, r) => n + r.count, 0);
        if (deleted >= 8) resolve();
      }),
    );
    await supervisor.start();
    try {
      await Promise.race([
        gone,
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error(`${deleted} of 8 rows deleted after 20 s`)), 20_000).unref(),
        ),
      ]);
    } finally {
      await supervisor.stop();
    }
    const { rows: left } = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM jobvisor.jobs');
    assert.equal(left[0]?.n, 0, 'cleanup deleted every row');
    const hour = await throughput(store, 'hour');
    assert.deepEqual(
      [hour.reduce((n, b) => n + b.done, 0), hour.reduce((n, b) => n + b.failed, 0)],
      [5, 3],
      'the chart still counts the deleted rows',
    );
    const o = await overview(store);
    assert.equal(o.queues.find((q) => q.queue === 'x')?.doneLastHour, 5);
    const { rows: old } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM jobvisor.finished_minutes WHERE minute < now() - interval '2 days'`,
    );
    assert.equal(old[0]?.n, 0, 'the 3-day-old minute was deleted');
  });

  it('reports a failing rollup as loop rollup and deletes all the same', async () => {
    await setWatermark({ minutesAgo: 10 });
    const { rows: clock } = await db.pool.query<{ now: Date }>('SELECT now() AS now');
    await insertFinished(
      Array.from({ length: 4 }, () => ({
        queue: 'y',
        status: 'done' as const,
        at: new Date(clock[0]!.now.getTime() - 5 * MINUTE),
      })),
    );
    // Every row the rollup would write breaks this constraint.
    await db.pool.query('ALTER TABLE jobvisor.finished_minutes ADD CONSTRAINT refuse_all CHECK (done < 0) NOT VALID');
    const supervisor = startSupervisor(db.url, {
      cleanup: { interval: '2s', retention: '3s' },
      queues: { default: { concurrency: 1 } },
    });
    const errors: string[] = [];
    supervisor.events.on('db:error', ({ loop }) => errors.push(loop));
    const cleaned = new Promise<number>((resolve) =>
      supervisor.events.on('jobs:cleaned', ({ rows }) => resolve(rows.reduce((n, r) => n + r.count, 0))),
    );
    await supervisor.start();
    try {
      const deleted = await Promise.race([
        cleaned,
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error('nothing deleted after 20 s')), 20_000).unref(),
        ),
      ]);
      assert.equal(deleted, 4);
    } finally {
      await supervisor.stop();
      await db.pool.query('ALTER TABLE jobvisor.finished_minutes DROP CONSTRAINT refuse_all');
    }
    assert.ok(errors.includes('rollup'), `errors reported: ${errors.join(', ')}`);
    assert.ok(!errors.includes('cleanup'), 'the cleanup round itself did not fail');
  });
});
