/**
 * `jobvisor start` says, in one line per queue, when explicit settings keep a
 * queue's `concurrency` out of reach, naming the real limit and the key to change.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { spawnSupervisor, type SpawnedSupervisor } from '../helpers/supervisor.ts';

let db: TestDatabase;
let supervisor: SpawnedSupervisor | undefined;

before(async () => {
  db = await createTestDatabase();
});
after(async () => {
  await supervisor?.stop();
  await db.drop();
});

describe('start-up limits', () => {
  it('warns once for a queue whose jobsPerThread caps its concurrency, not for one that derives it', async () => {
    supervisor = await spawnSupervisor({
      databaseUrl: db.url,
      config: {
        pool: { maxThreads: 2 },
        queues: { default: { concurrency: 50, jobsPerThread: 10 }, mail: { concurrency: 50 } },
      },
    });
    const line = await supervisor.waitForLog(/concurrency is 50, but at most/, 10_000);
    assert.equal(
      line.msg,
      'queues.default.concurrency is 50, but at most 20 of its jobs run at once (pool.maxThreads 2 × queues.default.jobsPerThread 10): raise queues.default.jobsPerThread to 25 (or remove it), or raise pool.maxThreads',
    );
    assert.equal(line.level, 40, 'a warning');
    const warnings = supervisor.logs.filter((l) => /concurrency is \d+, but at most/.test(String(l.msg)));
    assert.equal(warnings.length, 1, 'the mail queue derives jobsPerThread 50 and reaches 50');
    const ready = await supervisor.waitForLog(/^ready$/, 10_000);
    const queues = ready.queues as Record<string, { jobsPerThread: number }>;
    assert.equal(queues.mail?.jobsPerThread, 50);
  });
});
