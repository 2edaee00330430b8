/**
 * A pool is ended only after its threads have loaded their module. Node 20
 * aborted a `jobvisor start` once (in CI) with a V8 fatal error when a thread
 * was terminated inside the require() that loads the worker module, which is
 * where the pool's first thread is when a supervisor stops right after it was
 * built (a failed task check). Each thread now says when it has loaded
 * (worker/entry.ts), and the end waits for that (supervisor/threads.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Piscina } from 'piscina';
import { createThreadPool, threadsLoaded } from '../../src/supervisor/threads.ts';
import type { WorkerSetup } from '../../src/worker/protocol.ts';

const setup: WorkerSetup = {
  tasks: { files: {}, dirs: [] },
  // Never connected to: no job runs.
  databaseUrl: 'postgres://nobody@127.0.0.1:1/none',
  dbPoolSize: 1,
  maxResultBytes: 1024,
  maxSteps: 10,
  maxStepResultBytes: 1024,
  maxPayloadBytes: 1024,
  logLevel: 'silent',
  supervisor: 'thread-load-test',
  taskConfig: { thumbnails: { dir: '/tmp', format: 'webp' }, reports: { dir: '/tmp' }, schema: 'jobvisor' },
};

function pool(): { pool: Piscina; loaded: number[] } {
  const threads = createThreadPool({
    maxThreads: 2,
    idleTimeoutMs: 60_000,
    maxOldGenerationSizeMb: 0,
    maxYoungGenerationSizeMb: 0,
    stackSizeMb: 0,
    setup,
  });
  const loaded: number[] = [];
  threads.on('message', (m: { jobvisorThreadLoaded?: number }) => {
    if (m.jobvisorThreadLoaded !== undefined) loaded.push(m.jobvisorThreadLoaded);
  });
  return { pool: threads, loaded };
}

describe('ending a pool whose threads are still loading', () => {
  it('waits until every thread has said its module loaded', async () => {
    const { pool: threads, loaded } = pool();
    // Straight after the pool is made: its first thread is starting.
    const ids = threads.threads.map((t) => t.threadId);
    assert.equal(ids.length, 1, 'minThreads 1: one thread starts with the pool');
    assert.deepEqual(loaded, [], 'nothing has loaded yet');
    await threadsLoaded(threads, 120_000);
    assert.deepEqual(loaded, ids, 'resolved on the thread saying it loaded, not on the deadline');
    await threads.close({ force: true });
  });

  it('gives up at the deadline, so a thread that never loads cannot hold a stop', async () => {
    const { pool: threads, loaded } = pool();
    const started = performance.now();
    await threadsLoaded(threads, 0);
    assert.ok(performance.now() - started < 1000);
    assert.deepEqual(loaded, [], 'resolved before the thread loaded');
    await threadsLoaded(threads, 120_000);
    await threads.close({ force: true });
  });
});
