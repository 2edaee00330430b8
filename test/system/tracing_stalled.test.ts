/**
 * An OpenTelemetry collector that accepts connections and never answers (a
 * hung collector, a firewall that drops replies, a full sidecar): exporting is
 * best-effort, so jobs run at about the speed they run with a working
 * collector (an untraced run is measured too, for the record), and SIGTERM
 * still exits within shutdown.grace. Real `jobvisor
 * start` children, configured only by OTEL_* variables, against a real TCP
 * server that accepts and keeps every connection silent.
 */
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { after, before, describe, it } from 'node:test';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp.ts';
import { until } from '../helpers/poll.ts';
import { spawnSupervisor } from '../helpers/supervisor.ts';

// Enough that a run takes about a second: with 600 (about 200 ms) one pause of the busy test
// machine, half a second, made a silent collector's run 3.4x a working one's in one run of npm test.
// A real stall waits out an export's timeout (seconds) and still shows.
const JOBS = 3000;
const WARM_UP = 16;
const GRACE_MS = 3000;

/** A TCP server that accepts every connection, reads what comes, and never writes a byte. */
async function startBlackHole(): Promise<{ endpoint: string; connections: () => number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server: Server = createServer((socket) => {
    accepted++;
    sockets.add(socket);
    socket.on('data', () => {});
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections: () => accepted,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

describe('a collector that accepts and never answers', { timeout: 240_000 }, () => {
  let db: TestDatabase;
  let receiver: OtlpReceiver;
  let hole: Awaited<ReturnType<typeof startBlackHole>>;

  before(async () => {
    db = await createTestDatabase();
    receiver = await startOtlpReceiver();
    hole = await startBlackHole();
  });
  after(async () => {
    await hole?.close();
    await receiver?.close();
    await db?.drop();
  });

  /**
   * Runs JOBS no-op jobs on a fresh supervisor exporting to `endpoint` (none:
   * untraced); the time they took, then how long SIGTERM took.
   */
  const run = async (endpoint: string | null) => {
    const supervisor = await spawnSupervisor({
      databaseUrl: db.url,
      tasksDir: FIXTURE_TASKS,
      config: {
        pool: { maxThreads: 2 },
        queues: { default: { concurrency: 8, jobsPerThread: 4 } },
        poll: { interval: '200ms' },
        shutdown: { grace: `${GRACE_MS}ms` },
      },
      env:
        endpoint === null
          ? { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_TRACES_EXPORTER: '' }
          : {
              OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
              OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
              OTEL_SERVICE_NAME: 'jobvisor-stalled',
              OTEL_TRACES_SAMPLER: 'always_on',
            },
    });
    const done = (n: number) =>
      until(
        `${n} jobs done`,
        async () =>
          Number((await db.pool.query("SELECT count(*) FROM jobvisor.jobs WHERE status = 'done'")).rows[0].count),
        (count) => count === n,
        180_000,
      );
    const jobs = (n: number) => Array.from({ length: n }, (_, i) => ({ kind: 'chaos_noop', payload: { i } }));
    try {
      await db.pool.query('DELETE FROM jobvisor.jobs');
      // Warm up: a traced thread loads the SDK first (seconds of CPU on a busy machine), whatever the collector.
      await enqueueMany(db.pool, jobs(WARM_UP));
      await done(WARM_UP);
      const start = performance.now();
      await enqueueMany(db.pool, jobs(JOBS));
      await done(WARM_UP + JOBS);
      const runMs = performance.now() - start;
      // Nothing runs at the signal: the drain is quick, and what is left is the exporter's flush.
      const stopAt = performance.now();
      const code = await supervisor.stop('SIGTERM', 60_000);
      return { runMs, stopMs: performance.now() - stopAt, code };
    } finally {
      await supervisor.stop('SIGKILL');
    }
  };

  it('runs jobs at about the speed of a working collector, and SIGTERM exits within the grace', async () => {
    const untraced = await run(null);
    const working = await run(receiver.endpoint);
    const stalled = await run(hole.endpoint);
    const ratio = stalled.runMs / working.runMs;
    const line = (name: string, r: typeof untraced) =>
      `${name}: ${JOBS} jobs in ${r.runMs.toFixed(0)} ms (×${(r.runMs / untraced.runMs).toFixed(2)}), SIGTERM ${r.stopMs.toFixed(0)} ms`;
    process.stderr.write(
      `# ${line('untraced', untraced)}; ${line('working collector', working)}; ${line('silent collector', stalled)}; ` +
        `${hole.connections()} connections held\n`,
    );
    assert.ok(receiver.spans.length > 0, 'the working collector received spans');
    assert.ok(hole.connections() > 0, 'the supervisor did try to export to the silent collector');
    assert.equal(stalled.code, 0, 'a clean drain');
    assert.ok(ratio < 3, `jobs ran ${ratio.toFixed(2)}× slower with a silent collector than with a working one`);
    assert.ok(stalled.stopMs < GRACE_MS, `SIGTERM took ${stalled.stopMs.toFixed(0)} ms, grace ${GRACE_MS} ms`);
  });
});
