/**
 * PauseWatch.beforeClaim on a real PostgreSQL: it reads the paused set again
 * while that set is stale (never read, or the last read failed) or while
 * notifications are not being delivered, and costs nothing otherwise.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { pauseQueue, resumeQueue } from '../../src/queue/pause.ts';
import type { Store } from '../../src/queue/sql.ts';
import { SupervisorEvents } from '../../src/supervisor/events.ts';
import { PauseWatch } from '../../src/supervisor/loops/pause_watch.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

let db: TestDatabase;
/** Nothing listens on port 1: every statement on this pool fails to connect. */
let unreachable: pg.Pool;

before(async () => {
  db = await createTestDatabase('pause_watch');
  unreachable = new pg.Pool({ connectionString: 'postgres://nobody@127.0.0.1:1/none', connectionTimeoutMillis: 1000 });
  unreachable.on('error', () => {});
});

after(async () => {
  await unreachable.end();
  await db.drop();
});

function watch(store: Store, notified: () => boolean) {
  const changes: string[] = [];
  const w = new PauseWatch({
    store,
    queues: ['mail'],
    intervalMs: 60_000,
    notified,
    onPause: (q) => changes.push(`pause ${q}`),
    onResume: (q) => changes.push(`resume ${q}`),
    events: new SupervisorEvents(),
  });
  return { w, changes };
}

describe('PauseWatch.beforeClaim', () => {
  it('reads before the first claim, then not again while notifications arrive', async () => {
    await pauseQueue(db.pool, 'mail');
    const { w, changes } = watch({ db: db.pool, schema: 'jobvisor' }, () => true);
    await w.beforeClaim();
    assert.equal(w.isPaused('mail'), true);
    await resumeQueue(db.pool, 'mail');
    await w.beforeClaim();
    assert.equal(w.isPaused('mail'), true, 'fresh and notified: no read (the notification would say)');
    assert.deepEqual(changes, ['pause mail']);
  });

  it('reads before every claim while notifications are not delivered', async () => {
    let listening = false;
    const { w } = watch({ db: db.pool, schema: 'jobvisor' }, () => listening);
    await w.beforeClaim();
    assert.equal(w.isPaused('mail'), false);
    await pauseQueue(db.pool, 'mail');
    await w.beforeClaim();
    assert.equal(w.isPaused('mail'), true, 'the listener is down: the pause is read before the claim');
    listening = true;
    await resumeQueue(db.pool, 'mail');
    await w.beforeClaim();
    assert.equal(w.isPaused('mail'), true, 'listening again and fresh: no read');
  });

  it('after a failed read, rejects while the database is away and reads on the first claim once it answers', async () => {
    await resumeQueue(db.pool, 'mail');
    const store: Store = { db: db.pool, schema: 'jobvisor' };
    const { w } = watch(store, () => true);
    await w.beforeClaim();
    assert.equal(w.isPaused('mail'), false);
    store.db = unreachable;
    await assert.rejects(w.refresh(), /ECONNREFUSED|connect/);
    await assert.rejects(w.beforeClaim(), /ECONNREFUSED|connect/, 'stale: the claim must not go ahead');
    store.db = db.pool;
    await pauseQueue(db.pool, 'mail');
    await w.beforeClaim();
    assert.equal(w.isPaused('mail'), true, 'the first claim after the outage sees the pause');
    await resumeQueue(db.pool, 'mail');
  });
});
