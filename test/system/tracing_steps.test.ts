/**
 * A span per durable step, nested under the run that executed or replayed
 * it: a real `jobvisor start` child, configured only by OTEL_* variables,
 * runs a job whose second step fails on the first attempt; its spans are
 * exported over real OTLP/HTTP (JSON) to a receiver on loopback.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enqueue } from '../../src/queue/enqueue.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { attr, startOtlpReceiver, type OtlpReceiver, type OtlpSpan, tracingEnv } from '../helpers/otlp.ts';
import { spawnSupervisor, type SpawnedSupervisor } from '../helpers/supervisor.ts';

const STATUS_ERROR = 2;

let db: TestDatabase;
let receiver: OtlpReceiver;
let supervisor: SpawnedSupervisor | undefined;

before(async () => {
  db = await createTestDatabase('tracing_steps');
  receiver = await startOtlpReceiver();
  supervisor = await spawnSupervisor({
    databaseUrl: db.url,
    tasksDir: FIXTURE_TASKS,
    config: { pool: { maxThreads: 1 }, backoff: { base: '50ms', max: '200ms' }, poll: { interval: '200ms' } },
    env: tracingEnv(receiver, 'jobvisor-steps'),
    readyTimeoutMs: 120_000,
  });
});

after(async () => {
  await supervisor?.stop('SIGKILL');
  await receiver.close();
  await db.drop();
});

describe('step spans', () => {
  it('each step is a span under its run; a replayed step says so, a failed one records its error', async () => {
    const job = await enqueue(
      db.pool,
      'durable',
      {
        ops: [
          ['step', 'charge'],
          ['throw', 'invoice'],
          ['step', 'email'],
        ],
      },
      { maxAttempts: 3 },
    );
    const byAttempt = (spans: OtlpSpan[], n: number) =>
      spans.find(
        (s) =>
          s.name === 'jobvisor.run durable' &&
          attr(s, 'messaging.message.id') === job.id &&
          attr(s, 'jobvisor.attempt') === n,
      );
    const { runs, steps } = await receiver.waitFor((spans) => {
      const runs = [byAttempt(spans, 1), byAttempt(spans, 2)];
      if (!runs[0] || !runs[1]) return undefined;
      const ids = new Set(runs.map((r) => r?.spanId));
      const steps = spans.filter((s) => s.name.startsWith('jobvisor.step ') && ids.has(s.parentSpanId ?? ''));
      return steps.length >= 5 ? { runs: runs as [OtlpSpan, OtlpSpan], steps } : undefined;
    }, 30_000);
    const [first, second] = runs;
    const under = (run: OtlpSpan) =>
      steps
        .filter((s) => s.parentSpanId === run.spanId)
        .map((s) => ({
          name: s.name,
          step: attr(s, 'jobvisor.step.name'),
          replayed: attr(s, 'jobvisor.step.replayed'),
          attempt: attr(s, 'jobvisor.attempt'),
          failed: s.status?.code === STATUS_ERROR,
        }))
        .sort((a, b) => String(a.step).localeCompare(String(b.step)));
    assert.deepEqual(under(first), [
      { name: 'jobvisor.step charge', step: 'charge', replayed: false, attempt: 1, failed: false },
      { name: 'jobvisor.step invoice', step: 'invoice', replayed: false, attempt: 1, failed: true },
    ]);
    assert.deepEqual(under(second), [
      { name: 'jobvisor.step charge', step: 'charge', replayed: true, attempt: 2, failed: false },
      { name: 'jobvisor.step email', step: 'email', replayed: false, attempt: 2, failed: false },
      { name: 'jobvisor.step invoice', step: 'invoice', replayed: false, attempt: 2, failed: false },
    ]);
    for (const s of steps) assert.equal(s.traceId, runs.find((r) => r.spanId === s.parentSpanId)?.traceId);
    const failed = steps.find((s) => s.parentSpanId === first.spanId && attr(s, 'jobvisor.step.name') === 'invoice');
    assert.match(failed?.status?.message ?? '', /step invoice failed/);
    assert.ok(failed?.events?.some((e) => e.name === 'exception'));

    // A step that ran records itself inside its span: its INSERT is a child of it.
    const email = steps.find((s) => s.parentSpanId === second.spanId && attr(s, 'jobvisor.step.name') === 'email');
    const insert = await receiver.waitFor(
      (spans) =>
        spans.find(
          (s) =>
            s.parentSpanId === email?.spanId &&
            /INSERT INTO jobvisor\.job_steps/.test(String(attr(s, 'db.statement') ?? attr(s, 'db.query.text'))),
        ),
      15_000,
    );
    assert.equal(insert.traceId, email?.traceId);
  });

  it('a run that sleeps is parked, not failed, and the run after it replays the step before the sleep', async () => {
    const job = await enqueue(db.pool, 'durable', {
      ops: [
        ['step', 'before'],
        ['sleep', 'nap', '300ms'],
        ['step', 'after'],
      ],
    });
    const runs = await receiver.waitFor((spans) => {
      const runs = spans
        .filter((s) => s.name === 'jobvisor.run durable' && attr(s, 'messaging.message.id') === job.id)
        .sort((a, b) => String(attr(a, 'jobvisor.outcome')).localeCompare(String(attr(b, 'jobvisor.outcome'))));
      return runs.length >= 2 ? runs : undefined;
    }, 30_000);
    const [done, slept] = runs as [OtlpSpan, OtlpSpan];
    assert.equal(attr(slept, 'jobvisor.outcome'), 'parked');
    assert.equal(attr(slept, 'jobvisor.park.kind'), 'sleep');
    assert.equal(attr(slept, 'jobvisor.park.name'), 'nap');
    assert.notEqual(slept.status?.code, STATUS_ERROR, 'a sleep is not a failure');
    assert.equal(slept.events?.some((e) => e.name === 'exception') ?? false, false);
    assert.equal(attr(done, 'jobvisor.outcome'), 'done');
    // Sleeps give their attempt back: both runs are attempt 1.
    assert.deepEqual([attr(slept, 'jobvisor.attempt'), attr(done, 'jobvisor.attempt')], [1, 1]);
    const steps = await receiver.waitFor((spans) => {
      const found = spans.filter((s) => s.parentSpanId === done.spanId && s.name.startsWith('jobvisor.step '));
      return found.length >= 2 ? found : undefined;
    });
    assert.deepEqual(steps.map((s) => [attr(s, 'jobvisor.step.name'), attr(s, 'jobvisor.step.replayed')]).sort(), [
      ['after', false],
      ['before', true],
    ]);
  });
});
