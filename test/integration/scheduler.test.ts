/**
 * The scheduler never back-fills a schedule for fire times before it was first
 * seen (migration 024, queue/schedules.ts): a new `*\/5 * * * * *` schedule
 * enqueued 720 jobs at its first start, the hour of scheduler.catchUp before
 * it existed. Catch-up still enqueues the times a known schedule missed while
 * no supervisor ran it. Driven round by round (runOnce) with an injected clock.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Schedule } from '../../src/config/index.ts';
import { SupervisorEvents } from '../../src/supervisor/events.ts';
import { createScheduler } from '../../src/supervisor/loops/scheduler.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

const HOUR = 3_600_000;
const MINUTE = 60_000;

describe('scheduler: first sightings', () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase('scheduler');
  });
  after(async () => {
    await db.drop();
  });

  /** A schedule of kind `tick` every 5 seconds (unless `cron` says otherwise). */
  const every5 = (name: string, cron = '*/5 * * * * *'): Schedule => ({
    name,
    cron,
    kind: 'tick',
    payload: {},
    queue: 'default',
    priority: 0,
    timezone: null,
  });

  /** A scheduler of `schedules` whose clock reads `clock.now`, with the default catch-up of 1 h. */
  function scheduler(schedules: Schedule[], clock: { now: Date }) {
    return createScheduler({
      store: { db: db.pool, schema: 'jobvisor' },
      schedules,
      settings: { interval: 1000, catchUp: HOUR },
      maxAttempts: 8,
      events: new SupervisorEvents(),
      now: () => clock.now,
    });
  }

  const fires = async (name: string) =>
    (
      await db.pool.query<{ run_at: Date }>(
        `SELECT run_at FROM jobvisor.jobs WHERE unique_key LIKE $1 ORDER BY run_at`,
        [`schedule:${name}:%`],
      )
    ).rows.map((r) => r.run_at);

  const firstSeen = async (name: string) =>
    (
      await db.pool.query<{ cron: string; first_seen_at: Date }>(
        'SELECT cron, first_seen_at FROM jobvisor.schedules WHERE name = $1 ORDER BY first_seen_at',
        [name],
      )
    ).rows;

  // 0.5 s past a multiple of 5 s: no fire time falls on the clock's reading, and 12 s hold two.
  const start = () => new Date(Math.floor(Date.now() / 5000) * 5000 + 500);

  it('a new */5-second schedule adds no job for the hour before it existed, then one per fire time', async () => {
    const clock = { now: start() };
    const loop = scheduler([every5('new_every5')], clock);
    await loop.runOnce();
    assert.deepEqual(await fires('new_every5'), [], 'nothing before its first sighting (the old code: 720)');
    assert.deepEqual(await firstSeen('new_every5'), [{ cron: '*/5 * * * * *', first_seen_at: clock.now }]);

    clock.now = new Date(clock.now.getTime() + 12_000);
    await loop.runOnce();
    const times = await fires('new_every5');
    assert.equal(times.length, 2, `fire times within the 12 s since: ${times.map((t) => t.toISOString()).join()}`);
    for (const t of times) assert.equal(t.getTime() % 5000, 0);
  });

  it('a schedule first seen 10 minutes ago, all supervisors since stopped: its missed 10 minutes are caught up', async () => {
    const clock = { now: start() };
    await db.pool.query(`INSERT INTO jobvisor.schedules (name, cron, first_seen_at) VALUES ($1, $2, $3)`, [
      'known_every5',
      '*/5 * * * * *',
      new Date(clock.now.getTime() - 10 * MINUTE),
    ]);
    await scheduler([every5('known_every5')], clock).runOnce();
    const times = await fires('known_every5');
    assert.equal(times.length, 120, 'one per 5 s of the 10 minutes missed, none of the hour before');
    assert.ok((times[0] as Date).getTime() > clock.now.getTime() - 10 * MINUTE);
    assert.equal((await firstSeen('known_every5')).length, 1, 'its first sighting is kept');
  });

  it('a schedule whose cron changed is new: the new expression is not back-filled', async () => {
    const clock = { now: start() };
    await db.pool.query(`INSERT INTO jobvisor.schedules (name, cron, first_seen_at) VALUES ($1, $2, $3)`, [
      'changed',
      '0 3 * * *',
      new Date(clock.now.getTime() - 30 * 24 * HOUR),
    ]);
    await scheduler([every5('changed')], clock).runOnce();
    assert.deepEqual(await fires('changed'), []);
    assert.deepEqual(
      (await firstSeen('changed')).map((r) => r.cron),
      ['0 3 * * *', '*/5 * * * * *'],
    );
  });

  it('two supervisors starting together agree on the first sighting and enqueue each fire time once', async () => {
    const clock = { now: start() };
    const a = scheduler([every5('together')], clock);
    const b = scheduler([every5('together')], { now: new Date(clock.now.getTime() + 700) });
    await Promise.all([a.runOnce(), b.runOnce()]);
    const seen = await firstSeen('together');
    assert.equal(seen.length, 1);
    clock.now = new Date(clock.now.getTime() + 21_000);
    await Promise.all([a.runOnce(), b.runOnce()]);
    const times = await fires('together');
    assert.equal(new Set(times.map((t) => t.getTime())).size, times.length, 'no fire time twice');
    assert.ok(times.length >= 3 && times.length <= 5, `${times.length} fire times in 21 s`);
    for (const t of times) assert.ok(t > (seen[0]?.first_seen_at as Date));
  });
});
