/**
 * The rate limit on the starts tasks could see, in true time, when the
 * supervisors' readings of the database's clock are off (a long round trip on
 * a loaded machine): real claims (slots by the real claim statement), the real
 * DbClock, LimitedClaim and Fetcher (start_holds.ts), with local clocks
 * injected: one supervisor on the real clock, one 5 s ahead. Each DbClock
 * starts from one exchange of a 12-ms round trip, all of it on one leg, so
 * the first's offset comes out 6 ms low (its starts late) and the second's
 * 6 ms high (early); every later exchange reads 20 ms long or more, so none replaces
 * it. The database's clock is the machine's, the true one.
 *
 * A task starts at a reading of its supervisor's clock within its job's
 * start window (the worker thread checks it: worker/start_window.ts); a
 * reading n means a true moment in [n − skew, n + 1 − skew). Every start the
 * windows allow, placed as badly as possible, must keep any 1-s window at
 * `count`. With a window of [slot, slot + 20 ms] by the local clock, a job
 * started at the end of its window by the first supervisor and the job 20
 * slots later started at the beginning of its window by the second came
 * within 1 s: 21 starts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { QueueSettings } from '../../src/config/index.ts';
import { enqueueMany, type JobSpec } from '../../src/queue/enqueue.ts';
import type { ClaimedJob } from '../../src/queue/types.ts';
import { CLOCK_COMFORT_MS, CLOCK_PROBES, CLOCK_RETRY_MS, ClockGate } from '../../src/supervisor/claim/clock_gate.ts';
import { DbClock } from '../../src/supervisor/claim/db_clock.ts';
import { Fetcher } from '../../src/supervisor/claim/fetcher.ts';
import { LimitedClaim } from '../../src/supervisor/claim/limited.ts';
import type { ClaimStrategy } from '../../src/supervisor/claim/strategy.ts';
import { SupervisorEvents } from '../../src/supervisor/events.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { until } from '../helpers/poll.ts';

let db: TestDatabase;
before(async () => {
  db = await createTestDatabase('rate_start_windows');
});
after(async () => {
  await db.drop();
});

const COUNT = 20;
const PERIOD_MS = 1000;
const RATE = { count: COUNT, periodMs: PERIOD_MS, perKey: false };
const SETTINGS: QueueSettings = { concurrency: 1000, jobsPerThread: 1, prefetch: 0, timeout: null, rateLimit: RATE };

async function add(queue: string, n: number): Promise<void> {
  const jobs: JobSpec[] = [];
  for (let i = 0; i < n; i++) jobs.push({ kind: 'k', queue, payload: { i } });
  await enqueueMany(db.pool, jobs);
}

/**
 * A local clock `skewMs` off the real one, and the clock its exchanges with
 * the database are read with: each exchange reads it twice (sent, received),
 * the first reading `sentShiftMs` off, the second `receivedShiftMs`. Or, with
 * `sentShiftMs` 'slow', each reading 20 ms later than the one before, so every
 * exchange reads 20 ms long or more however exchanges overlap.
 */
function clocks(skewMs: number, sentShiftMs: number | 'slow', receivedShiftMs = 0) {
  const local = () => Date.now() + skewMs;
  let reads = 0;
  const exchange = () =>
    sentShiftMs === 'slow' ? local() + 20 * reads++ : local() + (reads++ % 2 === 0 ? sentShiftMs : receivedShiftMs);
  return { local, exchange, exchanges: () => reads / 2, skewMs };
}

/**
 * A DbClock whose one reading took `roundTripMs`, all on the way out (`early`:
 * the offset comes out half of it high) or all on the way back (late, low).
 */
function dbClockOff(c: ReturnType<typeof clocks>, roundTripMs: number, early: boolean): DbClock {
  const clock = new DbClock(c.local);
  const t = Date.now();
  const sentMs = t + c.skewMs - (early ? roundTripMs : 0);
  clock.observe({ sentMs, dbReceivedMs: t, dbRepliedMs: t, receivedMs: sentMs + roundTripMs });
  return clock;
}

function limitedClaim(
  queue: string,
  owner: string,
  c: ReturnType<typeof clocks>,
  dbClock = new DbClock(c.local),
): LimitedClaim {
  const context = {
    store: { db: db.pool, schema: 'jobvisor' },
    queue,
    owner,
    leaseMs: 60_000,
    maxPayloadBytes: 1 << 20,
    durable: () => false,
  };
  return new LimitedClaim(context, { rateLimit: RATE }, dbClock, c.exchange);
}

/** A supervisor's fetcher claiming `places` at a time; the jobs it placed (their windows set) and handed back. */
function supervisor(queue: string, owner: string, c: ReturnType<typeof clocks>, dbClock: DbClock, places: number) {
  const placed: ClaimedJob[] = [];
  const handedBack: string[] = [];
  const inner = limitedClaim(queue, owner, c, dbClock);
  const strategy: ClaimStrategy = {
    splitsPlacesFirst: false,
    claim: async (limit) => {
      const result = await inner.claim(limit);
      placed.push(...result.jobs);
      return result;
    },
    nextDueIn: () => inner.nextDueIn(),
  };
  const fetcher = new Fetcher({
    queue,
    settings: SETTINGS,
    strategy,
    leaseMs: 60_000,
    pollIntervalMs: 1000,
    capacity: () => places,
    deliver: () => {},
    handBack: (jobs, reason) => handedBack.push(...jobs.map((j) => `${j.id}: ${reason}`)),
    events: new SupervisorEvents(),
    clock: c.local,
  });
  return { fetcher, placed, handedBack, skewMs: c.skewMs };
}

describe('rate-limited start windows under clock error', () => {
  it('two supervisors, one 5 s ahead, each off by 6 ms the other way: any start the windows allow keeps 20/1s', async () => {
    const n = 45;
    await add('paced', n);
    const [onTime, ahead] = [clocks(0, 'slow'), clocks(5000, 'slow')];
    const late = supervisor('paced', 'late', onTime, dbClockOff(onTime, 12, false), 3);
    const early = supervisor('paced', 'early', ahead, dbClockOff(ahead, 12, true), 4);
    const both = [late, early];
    await until(
      `${n} jobs placed or handed back`,
      async () => {
        for (const s of both) await s.fetcher.runOnce();
        return both.reduce((sum, s) => sum + s.placed.length, 0);
      },
      (claimed) => claimed === n,
      30_000,
      20,
    );
    for (const s of both) await s.fetcher.stop();

    const { rows } = await db.pool.query<{ id: string; slot: number }>(
      "SELECT id::text, extract(epoch FROM started_at)::float8 * 1000 AS slot FROM jobvisor.jobs WHERE queue = 'paced'",
    );
    const slotOf = new Map(rows.map((r) => [r.id, r.slot]));
    // Every true moment a start may take: [first allowed reading, last allowed reading + 1) less the skew.
    const ranges: Array<{ id: string; lo: number; hi: number; slot: number }> = [];
    for (const s of both)
      for (const job of s.placed) {
        const w = job.startWindow;
        if (w === undefined) continue;
        const slot = slotOf.get(job.id) as number;
        ranges.push({
          id: job.id,
          lo: Math.ceil(w.notBeforeMs) - s.skewMs,
          hi: Math.floor(w.notAfterMs) + 1 - s.skewMs,
          slot,
        });
      }
    const uncertain = both.flatMap((s) => s.handedBack).filter((r) => r.includes('too uncertain'));
    console.log(`# ${ranges.length} jobs given a window, ${uncertain.length} handed back for the clock`);
    assert.ok(ranges.length > COUNT, `${ranges.length} windows: enough to fill a 1-s window and more`);

    // The most starts one 1-s window [t, t + 1000) can take, each start anywhere in its range:
    // t just below some range's end, every range ending after t and beginning before t + 1000.
    let busiest = 0;
    for (const r of ranges) {
      const t = r.hi - 0.01;
      busiest = Math.max(busiest, ranges.filter((o) => o.hi > t && o.lo < t + PERIOD_MS).length);
    }
    assert.ok(busiest <= COUNT, `starts the windows allow put ${busiest} into one 1-s window of a ${COUNT}/1s limit`);
    for (const r of ranges) {
      assert.ok(r.lo >= r.slot - 0.01, `job ${r.id} may start ${(r.slot - r.lo).toFixed(1)} ms before its slot`);
      assert.ok(r.hi <= r.slot + 25 + 0.01, `job ${r.id} may start ${(r.hi - r.slot).toFixed(1)} ms after its slot`);
    }
  });

  it('a clock too uncertain for any window: the claim reads it again, then claims nothing and tries later', async () => {
    await add('foggy', 5);
    // Every exchange 30 ms long on one leg: ±16.5 ms, where 9 is the most a 1-s limit can place starts with.
    const fog = clocks(0, -30, 0);
    const foggy = limitedClaim('foggy', 'foggy', fog);
    const result = await foggy.claim(5);
    assert.equal(result.jobs.length, 0, 'nothing claimed');
    assert.equal(result.retryInMs, CLOCK_RETRY_MS, 'tried again a little later');
    assert.equal(fog.exchanges(), CLOCK_PROBES, 'the clock was read again, a few times, and no claim was sent');
    // Woken again at once (a notification): no burst of reads, the same answer.
    const again = await foggy.claim(5);
    assert.equal(again.jobs.length, 0);
    assert.ok(again.retryInMs !== null && again.retryInMs <= CLOCK_RETRY_MS, `retry in ${again.retryInMs} ms`);
    assert.equal(fog.exchanges(), CLOCK_PROBES, 'not read again before CLOCK_RETRY_MS');
    const { rows } = await db.pool.query<{ pending: number; attempts: number }>(
      "SELECT count(*) FILTER (WHERE status = 'pending')::int AS pending, max(attempts)::int AS attempts FROM jobvisor.jobs WHERE queue = 'foggy'",
    );
    assert.deepEqual(rows[0], { pending: 5, attempts: 0 }, 'the jobs wait, attempts untouched');
    // A supervisor whose clock reads well takes them.
    const clear = await limitedClaim('foggy', 'clear', clocks(0, 0, 0)).claim(5);
    assert.ok(clear.jobs.length > 0, 'a clock read well claims');
    assert.ok(clear.slots !== undefined && clear.slots.errorMs <= 9, `error ${clear.slots?.errorMs} ms`);
  });

  it('a usable but rough clock is read again on the side, and the better reading kept', async () => {
    const c = clocks(0, 0, 0);
    const dbClock = dbClockOff(c, 12, true);
    assert.ok(dbClock.errorMs > CLOCK_COMFORT_MS, `starts rough: ±${dbClock.errorMs} ms`);
    const gate = new ClockGate(dbClock, c.exchange);
    const started = Date.now();
    // Each claim asks the gate; a loaded machine may need more than one reading (one a second).
    await until(
      'a better reading',
      async () => {
        assert.equal(await gate.wait(db.pool, PERIOD_MS), null, 'usable: the claim goes ahead at once');
        return dbClock.errorMs;
      },
      (e) => e <= CLOCK_COMFORT_MS,
      15_000,
      10,
    );
    const readings = c.exchanges();
    assert.ok(readings <= (Date.now() - started) / 1000 + 1, `${readings} readings: at most one a second`);
    assert.equal(await gate.wait(db.pool, PERIOD_MS), null);
    assert.equal(c.exchanges(), readings, 'none once the clock is good');
  });
});
