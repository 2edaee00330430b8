/**
 * The fetcher's loop without a database: a fake claim strategy answers each
 * claim with what the test scripted, and the clock and timers are mocked. What
 * the loop decides: how many places to ask for, when to claim again (a wake
 * during a claim, a backlog when capacity frees, a limit's retry, the next
 * delayed job), what to do with what comes back (deliver, hold until a rate
 * slot, hand back when paused), and that a failing claim is reported, not thrown.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import type { QueueSettings } from '../../src/config/index.ts';
import type { ClaimedJob } from '../../src/queue/types.ts';
import type { ClaimResult, ClaimStrategy } from '../../src/supervisor/claim/strategy.ts';
import { SupervisorEvents } from '../../src/supervisor/events.ts';
import { Fetcher } from '../../src/supervisor/claim/fetcher.ts';
import { DISPATCH_LEAD_MS, LEADLESS_WINDOW_MS, leadlessQueue } from '../../src/supervisor/claim/start_holds.ts';

let nextId = 1;
function jobs(n: number): ClaimedJob[] {
  return Array.from({ length: n }, () => {
    const id = String(nextId++);
    return {
      id,
      token: `t${id}`,
      kind: 'k',
      queue: 'q',
      payload: '{}',
      payloadBytes: null,
      payloadStoredBytes: null,
      attempt: 1,
      maxAttempts: 3,
      runAtMs: 0,
    };
  });
}

/** A strategy that answers each claim from a script (default: nothing due), recording each limit asked. */
class FakeStrategy implements ClaimStrategy {
  readonly asked: number[] = [];
  readonly answers: Array<ClaimResult | Error | ((limit: number) => ClaimResult)> = [];
  dueIn: number | null = null;
  dueAsked = 0;
  /** Resolves the claim in flight (claims wait for it while `gate` is set). */
  gate: Promise<void> | undefined;

  constructor(readonly splitsPlacesFirst = true) {}

  async claim(limit: number): Promise<ClaimResult> {
    this.asked.push(limit);
    if (this.gate) await this.gate;
    const answer = this.answers.shift() ?? { jobs: [], retryInMs: null };
    if (answer instanceof Error) throw answer;
    return typeof answer === 'function' ? answer(limit) : answer;
  }

  nextDueIn(): Promise<number | null> {
    this.dueAsked++;
    return Promise.resolve(this.dueIn);
  }
}

interface Rig {
  fetcher: Fetcher;
  strategy: FakeStrategy;
  delivered: ClaimedJob[];
  handedBack: Array<{ ids: string[]; reason: string }>;
  events: SupervisorEvents;
  free: { places: number };
}

function rig(settings: Partial<QueueSettings> = {}, strategy = new FakeStrategy()): Rig {
  const delivered: ClaimedJob[] = [];
  const handedBack: Rig['handedBack'] = [];
  const events = new SupervisorEvents();
  const full: QueueSettings = { concurrency: 4, jobsPerThread: 4, prefetch: 0, timeout: null, ...settings };
  const free = { places: full.concurrency + full.prefetch };
  const fetcher = new Fetcher({
    queue: 'q',
    settings: full,
    strategy,
    leaseMs: 30_000,
    pollIntervalMs: 1000,
    capacity: () => free.places,
    deliver: (js) => {
      delivered.push(...js);
      free.places -= js.length;
    },
    handBack: (js, reason) => handedBack.push({ ids: js.map((j) => j.id), reason }),
    events,
  });
  return { fetcher, strategy, delivered, handedBack, events, free };
}

/** Lets the promise callbacks queued so far run (the fetcher's claim is a chain of them). */
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

/** A queue limited per key, 4 places and 8 claimed ahead, with a limited claim's strategy (it does not split). */
const perKeyRig = (): Rig =>
  rig({ concurrency: 4, jobsPerThread: 4, prefetch: 8, perKeyConcurrency: 1 }, new FakeStrategy(false));

/** A per-key queue's claim of 4 jobs, cut short with `keys` keys visited, then one of the 4 ended. */
async function oneEndedAfter(keys: number): Promise<Rig> {
  const r = perKeyRig();
  r.strategy.answers.push({ jobs: jobs(4), retryInMs: 200, keysBound: keys }, { jobs: jobs(1), retryInMs: 200 });
  assert.equal(await r.fetcher.runOnce(), 4);
  r.free.places += 1;
  r.fetcher.onCapacity();
  await drain();
  return r;
}

/** A claim woken now that takes `ms` by the mocked clock, with `meanwhile` done while it is under way. */
async function claimTaking(ms: number, fetcher: Fetcher, strategy: FakeStrategy, meanwhile = () => {}): Promise<void> {
  let open!: () => void;
  strategy.gate = new Promise((resolve) => (open = resolve));
  fetcher.wake();
  await drain();
  meanwhile();
  mock.timers.tick(ms);
  strategy.gate = undefined;
  open();
  await drain();
}

/** Lets every callback queued so far run, promise chains and I/O callbacks alike (setImmediate is not mocked). */
async function drain(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
}

beforeEach(() => {
  mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 1_000_000 });
});
afterEach(() => {
  mock.timers.reset();
});

describe('fetcher loop (fake strategy)', () => {
  it('asks for its free places, and a wake during a claim makes exactly one more claim after it', async () => {
    const { fetcher, strategy, delivered } = rig();
    let open!: () => void;
    strategy.gate = new Promise((resolve) => (open = resolve));
    strategy.answers.push({ jobs: jobs(2), retryInMs: null }, { jobs: jobs(1), retryInMs: null });
    fetcher.wake();
    await settle();
    fetcher.wake();
    fetcher.wake();
    await settle();
    assert.deepEqual(strategy.asked, [4], 'one claim in flight');
    strategy.gate = undefined;
    open();
    await settle();
    await fetcher.stop();
    assert.deepEqual(strategy.asked, [4, 2], 'the wakes during it: one claim, for what was left');
    assert.equal(delivered.length, 3);
  });

  it('holding nothing, claims for its places first and for its prefetch right after; a limited strategy does not split', async () => {
    const split = rig({ prefetch: 8 });
    split.strategy.answers.push((n) => ({ jobs: jobs(n), retryInMs: null }));
    split.strategy.answers.push((n) => ({ jobs: jobs(n), retryInMs: null }));
    assert.equal(await split.fetcher.runOnce(), 4);
    await split.fetcher.stop();
    assert.deepEqual(split.strategy.asked, [4, 8]);

    const whole = rig({ prefetch: 8 }, new FakeStrategy(false));
    whole.strategy.answers.push((n) => ({ jobs: jobs(n), retryInMs: null }));
    assert.equal(await whole.fetcher.runOnce(), 12);
    await whole.fetcher.stop();
    assert.deepEqual(whole.strategy.asked, [12]);
  });

  it('a backlog claims again when enough capacity frees up, not for every place', async () => {
    const { fetcher, strategy, free } = rig({ concurrency: 8, jobsPerThread: 8 });
    strategy.answers.push((n) => ({ jobs: jobs(n), retryInMs: null }));
    assert.equal(await fetcher.runOnce(), 8, 'a full claim: a backlog');
    free.places = 1;
    fetcher.onCapacity();
    await settle();
    assert.deepEqual(strategy.asked, [8], 'one place is less than a batch (a quarter of the places)');
    free.places = 2;
    fetcher.onCapacity();
    await settle();
    await fetcher.stop();
    assert.deepEqual(strategy.asked, [8, 2]);
  });

  it('a claim held back by a limit is tried again after the time it names, without asking when the next job is due', async () => {
    const { fetcher, strategy } = rig();
    strategy.answers.push({ jobs: jobs(1), retryInMs: 200 }, { jobs: jobs(1), retryInMs: null });
    await fetcher.runOnce();
    assert.equal(strategy.dueAsked, 0, 'held back is not "nothing due": no due timer');
    mock.timers.tick(199);
    await settle();
    assert.deepEqual(strategy.asked, [4]);
    mock.timers.tick(1);
    await settle();
    assert.deepEqual(strategy.asked, [4, 3], 'claimed again at 200 ms');
    await fetcher.stop();
  });

  it('an empty claim arms a timer for the next delayed job when it comes due before the poll, and none otherwise', async () => {
    const soon = rig();
    soon.strategy.dueIn = 30;
    assert.equal(await soon.fetcher.runOnce(), 0);
    mock.timers.tick(30);
    await settle();
    assert.equal(soon.strategy.asked.length, 2, 'woken when the job came due');
    await soon.fetcher.stop();

    const late = rig();
    late.strategy.dueIn = 5000;
    await late.fetcher.runOnce();
    mock.timers.tick(5000);
    await settle();
    assert.equal(late.strategy.asked.length, 1, 'the poll (not this fetcher) finds it');
    await late.fetcher.stop();
  });

  it('jobs of a claim that returns after a pause are handed back, never delivered; resuming claims at once', async () => {
    const { fetcher, strategy, delivered, handedBack } = rig();
    let open!: () => void;
    strategy.gate = new Promise((resolve) => (open = resolve));
    strategy.answers.push({ jobs: jobs(2), retryInMs: null });
    fetcher.wake();
    await settle();
    fetcher.setPaused(true);
    strategy.gate = undefined;
    open();
    await settle();
    assert.equal(delivered.length, 0);
    assert.deepEqual(
      handedBack.map((h) => h.reason),
      ['queue paused'],
    );
    fetcher.wake();
    await settle();
    assert.equal(strategy.asked.length, 1, 'a paused fetcher claims nothing');
    fetcher.setPaused(false);
    await settle();
    assert.equal(strategy.asked.length, 2, 'resuming claims at once');
    await fetcher.stop();
  });

  it('rate-limited jobs are held until their slot, renewed meanwhile, dropped when their lease is lost', async () => {
    const { fetcher, strategy, delivered, handedBack } = rig({
      rateLimit: { count: 10, periodMs: 1000, perKey: false },
    });
    const now = Date.now();
    const claimed = jobs(3);
    strategy.answers.push({
      jobs: claimed,
      retryInMs: null,
      slots: { atMs: [now + 50, now + 150, now + 250], periodMs: 1000, errorMs: 1 },
    });
    await fetcher.runOnce();
    assert.equal(delivered.length, 0);
    assert.equal(fetcher.fences().length, 3, 'held jobs are in the heartbeat fences');
    fetcher.leaseLost([claimed[2]?.token as string]);
    // The window opens at slot + 1 ms (the clock's error); the job leaves DISPATCH_LEAD_MS before.
    mock.timers.tick(51 - DISPATCH_LEAD_MS - 1);
    assert.equal(delivered.length, 0, 'not before the lead');
    mock.timers.tick(1);
    assert.deepEqual(
      delivered.map((j) => j.id),
      [claimed[0]?.id],
      'handed to the dispatcher a few ms before its slot',
    );
    // Within [slot, slot + 25 ms] by the database's clock whatever the 1-ms error: [slot + 1, slot + 25 - 1 - 1].
    assert.deepEqual(delivered[0]?.startWindow, { notBeforeMs: now + 51, notAfterMs: now + 73 });
    fetcher.setPaused(true);
    assert.deepEqual(handedBack, [{ ids: [claimed[1]?.id as string], reason: 'queue paused' }], 'the lost one is gone');
    mock.timers.tick(1000);
    assert.equal(delivered.length, 1);
    await fetcher.stop();
  });

  it('under a limit fast enough for the lead to hold a tenth of its places, a job leaves when a wide window opens', async () => {
    assert.equal(leadlessQueue({ count: 10, periodMs: 1000 }, 4), false);
    assert.equal(leadlessQueue({ count: 200, periodMs: 1000 }, 50), false, 'the chaos test: 0.4 places');
    assert.equal(leadlessQueue({ count: 2500, periodMs: 1000 }, 50), false, 'exactly a tenth: kept');
    assert.equal(leadlessQueue({ count: 2501, periodMs: 1000 }, 50), true);
    const { fetcher, strategy, delivered } = rig({ rateLimit: { count: 100_000, periodMs: 1000, perKey: false } });
    const now = Date.now();
    // A 1-ms error leaves [slot + 1, slot + 25 - 1 - 1]: 22 ms wide.
    strategy.answers.push({ jobs: jobs(1), retryInMs: null, slots: { atMs: [now + 50], periodMs: 1000, errorMs: 1 } });
    await fetcher.runOnce();
    mock.timers.tick(50);
    assert.equal(delivered.length, 0, 'not before its window opens');
    mock.timers.tick(1);
    assert.equal(delivered.length, 1, 'handed over when its window opens');
    await fetcher.stop();
  });

  it('under a fast limit, a job with a narrow start window still goes DISPATCH_LEAD_MS before it opens', async () => {
    const { fetcher, strategy, delivered } = rig({ rateLimit: { count: 100_000, periodMs: 1000, perKey: false } });
    const now = Date.now();
    // A 9-ms error leaves [slot + 9, slot + 25 - 9 - 1]: 6 ms, under LEADLESS_WINDOW_MS.
    strategy.answers.push({ jobs: jobs(1), retryInMs: null, slots: { atMs: [now + 50], periodMs: 1000, errorMs: 9 } });
    await fetcher.runOnce();
    const opens = 59;
    const closes = 65;
    assert.ok(closes - opens < LEADLESS_WINDOW_MS, 'a window narrower than LEADLESS_WINDOW_MS');
    mock.timers.tick(opens - DISPATCH_LEAD_MS - 1);
    assert.equal(delivered.length, 0);
    mock.timers.tick(1);
    assert.equal(delivered.length, 1, 'handed over DISPATCH_LEAD_MS before its window opens');
    assert.deepEqual(delivered[0]?.startWindow, { notBeforeMs: now + opens, notAfterMs: now + closes });
    await fetcher.stop();
  });

  it('a rate-limited queue claims to hold, beyond its places, what went to its places in the last 100 ms, and no more', async () => {
    const { fetcher, strategy, delivered, free } = rig({ rateLimit: { count: 1000, periodMs: 1000, perKey: false } });
    const slotsAt = (ms: number, n: number) => ({ atMs: Array(n).fill(Date.now() + ms), periodMs: 1000, errorMs: 0 });
    strategy.answers.push({ jobs: jobs(4), retryInMs: null, slots: slotsAt(10, 4) });
    await fetcher.runOnce();
    mock.timers.tick(10);
    assert.equal(delivered.length, 4, 'the first four went to the places at their slot');
    free.places = 4; // and finished
    // Holding nothing, with four gone to the places in the last 100 ms: it claims for its
    // four free places and four more to hold. Eight held for slots further ahead: four
    // beside the places, four more for what went to them.
    strategy.answers.push({ jobs: jobs(8), retryInMs: null, slots: slotsAt(500, 8) });
    await fetcher.runOnce();
    strategy.answers.push({ jobs: jobs(1), retryInMs: null, slots: slotsAt(500, 1) });
    await fetcher.runOnce();
    assert.deepEqual(strategy.asked, [4, 8, 4], 'holding 8, it claims for its 4 free places only');
    await fetcher.runOnce();
    assert.deepEqual(strategy.asked, [4, 8, 4, 3], 'holding 9, the one past that takes a place');
    await fetcher.stop();
  });

  it('a rate-limited queue holding more than it may does not claim for each place that frees', async () => {
    const { fetcher, strategy, free } = rig({
      concurrency: 8,
      jobsPerThread: 8,
      rateLimit: { count: 1000, periodMs: 1000, perKey: false },
    });
    const slotsAt = (ms: number, n: number) => ({ atMs: Array(n).fill(Date.now() + ms), periodMs: 1000, errorMs: 0 });
    strategy.answers.push({ jobs: jobs(8), retryInMs: null, slots: slotsAt(500, 8) });
    await fetcher.runOnce();
    free.places = 7;
    strategy.answers.push({ jobs: jobs(7), retryInMs: null, slots: slotsAt(500, 7) });
    await fetcher.runOnce();
    assert.deepEqual(strategy.asked, [8, 7], 'a backlog: each claim was full');
    // Holding 15 where 8 may wait: 8 free places leave room for 1, less than a batch (2).
    free.places = 8;
    fetcher.onCapacity();
    await settle();
    assert.deepEqual(strategy.asked, [8, 7], 'no claim of a single job');
    await fetcher.stop();
  });

  it('a rate-limited job whose slot the clock is too uncertain to place is handed back, not held', async () => {
    const { fetcher, strategy, delivered, handedBack } = rig({
      rateLimit: { count: 10, periodMs: 1000, perKey: false },
    });
    const now = Date.now();
    const claimed = jobs(2);
    // ±11 ms leaves 25 - 22 - 1 = 2 ms: under MIN_START_WINDOW_MS.
    strategy.answers.push({
      jobs: claimed,
      retryInMs: null,
      slots: { atMs: [now + 50, now + 100], periodMs: 1000, errorMs: 11 },
    });
    await fetcher.runOnce();
    assert.equal(delivered.length, 0);
    assert.equal(fetcher.fences().length, 0, 'nothing is held');
    assert.deepEqual(
      handedBack.map((h) => h.ids),
      [claimed.map((j) => j.id)],
    );
    assert.match(
      handedBack[0]?.reason ?? '',
      /database clock too uncertain \(±11\.0 ms\) for its rate-limit start slot/,
    );
    await fetcher.stop();
  });

  it('a per-key queue whose few keys cut its claim short claims again once 90 % of those jobs ended, not before', async () => {
    // 4 keys of perKeyConcurrency 1 beside 4 places: the keys bound the queue (key_turnover.ts).
    const { fetcher, strategy, free } = perKeyRig();
    strategy.answers.push({ jobs: jobs(4), retryInMs: 200, keysBound: 4 }, { jobs: jobs(4), retryInMs: 200 });
    // A run of an earlier claim ends during this one.
    await claimTaking(5, fetcher, strategy, () => fetcher.onCapacity());
    assert.deepEqual(strategy.asked, [4], 'capacity freed during the claim does not claim again at once');
    free.places += 3;
    fetcher.onCapacity();
    await drain();
    assert.equal(strategy.asked.length, 1, '3 of its 4 jobs ended: less than 90 %');
    free.places += 1;
    fetcher.onCapacity();
    await drain();
    assert.equal(strategy.asked.length, 2, 'all 4 ended: it claims');
    await fetcher.stop();
  });

  it('that wait lasts no longer than the claim took', async () => {
    const { fetcher, strategy, free } = perKeyRig();
    strategy.answers.push({ jobs: jobs(4), retryInMs: 200, keysBound: 4 }, { jobs: jobs(1), retryInMs: 200 });
    await claimTaking(5, fetcher, strategy);
    free.places += 1;
    fetcher.onCapacity();
    mock.timers.tick(4);
    await drain();
    assert.equal(strategy.asked.length, 1, '4 ms after a 5-ms claim, one job of 4 ended: it waits');
    mock.timers.tick(1);
    await drain();
    assert.equal(strategy.asked.length, 2, 'as long as the claim took: it claims');
    await fetcher.stop();
  });

  it('a wake (new jobs, the poll) claims at once while such a claim waits', async () => {
    const { fetcher, strategy } = await oneEndedAfter(4);
    assert.equal(strategy.asked.length, 1, 'one job of 4 ended: it waits');
    fetcher.wake();
    await drain();
    assert.equal(strategy.asked.length, 2, 'woken: it claims');
    await fetcher.stop();
  });

  it('a per-key queue with many keys beside its places claims again at once when a claim is cut short', async () => {
    // 100 keys of perKeyConcurrency 1 beside 4 places: the places, not the keys, bound the queue.
    const { fetcher, strategy } = await oneEndedAfter(100);
    assert.equal(strategy.asked.length, 2, 'one job of 4 ended: it claims');
    await fetcher.stop();
  });

  it('a failing claim is reported as db:error and the next wake claims again', async () => {
    const { fetcher, strategy, events, delivered } = rig();
    const errors: unknown[] = [];
    events.on('db:error', ({ err }) => errors.push(err));
    strategy.answers.push(new Error('connection lost'), { jobs: jobs(1), retryInMs: null });
    assert.equal(await fetcher.runOnce(), 0);
    assert.equal((errors[0] as Error).message, 'connection lost');
    assert.equal(await fetcher.runOnce(), 1);
    assert.equal(delivered.length, 1);
    await fetcher.stop();
  });

  it('stop() waits for the claim in flight and hands back what it holds; it is idempotent', async () => {
    const { fetcher, strategy, handedBack } = rig({ rateLimit: { count: 10, periodMs: 1000, perKey: false } });
    strategy.answers.push({
      jobs: jobs(1),
      retryInMs: null,
      slots: { atMs: [Date.now() + 500], periodMs: 1000, errorMs: 1 },
    });
    fetcher.wake();
    await settle();
    await fetcher.stop();
    await fetcher.stop();
    assert.deepEqual(
      handedBack.map((h) => h.reason),
      ['fetcher stopped before the start slot'],
    );
    fetcher.wake();
    assert.equal(strategy.asked.length, 1, 'a stopped fetcher claims nothing');
  });
});
