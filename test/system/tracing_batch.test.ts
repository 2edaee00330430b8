/**
 * Tracing of batch calls, end to end: jobs enqueued each inside its own
 * request's span; a real `jobvisor start` child, configured only by OTEL_*
 * variables, runs them in one call of a batch task and exports over real
 * OTLP/HTTP (JSON). The call is a span `jobvisor.batch <kind>` of its own,
 * linked to every request; each job keeps a `jobvisor.run <kind>` span in its
 * request's trace, with its own outcome, linked to the call's span; the task's
 * own work (ctx.db's query) nests under the call.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { context, trace } from '@opentelemetry/api';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { enqueue } from '../../src/queue/enqueue.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { attr, startOtlpReceiver, type OtlpReceiver, tracingEnv } from '../helpers/otlp.ts';
import { until } from '../helpers/poll.ts';
import { spawnSupervisor, type SpawnedSupervisor } from '../helpers/supervisor.ts';

const SPAN_KIND_CONSUMER = 5;
const STATUS_ERROR = 2;

let db: TestDatabase;
let receiver: OtlpReceiver;
let supervisor: SpawnedSupervisor | undefined;
const provider = new NodeTracerProvider();

before(async () => {
  provider.register();
  db = await createTestDatabase('tracing_batch');
  await db.pool.query(`
    CREATE TABLE batch_calls (call serial, kind text, ids bigint[], key text, at timestamptz DEFAULT clock_timestamp());
    CREATE TABLE batch_release (name text);`);
  receiver = await startOtlpReceiver();
  supervisor = await spawnSupervisor({
    databaseUrl: db.url,
    tasksDir: FIXTURE_TASKS,
    config: {
      pool: { maxThreads: 1 },
      queues: { default: { concurrency: 10 } },
      poll: { interval: '200ms' },
    },
    env: tracingEnv(receiver),
  });
});

after(async () => {
  await supervisor?.stop('SIGKILL');
  await receiver.close();
  await provider.shutdown();
  await db.drop();
});

describe('tracing a batch call', () => {
  it("links every job's span to the call's span, and the call to every request", async () => {
    const outcomes = ['ok', 'permanent', 'ok'] as const;
    // Three requests, each enqueuing one job inside its own span (held open until all
    // three are in, so the batch gathers them into one call: maxSize 5, maxWait 400 ms).
    const producers: Array<{ traceId: string; spanId: string }> = [];
    const ids: string[] = [];
    const spans = outcomes.map((_, i) => trace.getTracer('test-producer').startSpan(`producer.request ${i}`));
    for (const [i, span] of spans.entries()) {
      producers.push(span.spanContext());
      const ctx = trace.setSpan(context.active(), span);
      const job = await context.with(ctx, () =>
        enqueue(db.pool, 'batch_call', { n: i, outcome: outcomes[i] }, { maxAttempts: 1 }),
      );
      ids.push(job.id);
    }
    for (const span of spans) span.end();
    const { rows } = await until(
      'every job written',
      () =>
        db.pool.query<{ status: string; batch_id: string }>(
          'SELECT status, batch_id::text FROM jobvisor.jobs WHERE id = ANY($1::bigint[]) ORDER BY id',
          [ids],
        ),
      (r) => r.rows.every((j) => j.status === 'done' || j.status === 'failed'),
      30_000,
    );
    const callId = rows[0]?.batch_id;
    assert.ok(callId && rows.every((j) => j.batch_id === callId), 'one call');

    const { batch, runs } = await receiver.waitFor((all) => {
      const batch = all.find((s) => s.name === 'jobvisor.batch batch_call' && attr(s, 'jobvisor.batch.id') === callId);
      const runs = ids.map((id) =>
        all.find((s) => s.name === 'jobvisor.run batch_call' && attr(s, 'messaging.message.id') === id),
      );
      return batch && runs.every(Boolean) ? { batch, runs } : undefined;
    });
    // The call: a root span of its own, linked to each request, sized.
    assert.equal(batch.parentSpanId || undefined, undefined, 'the call is a root span');
    assert.equal(batch.kind, SPAN_KIND_CONSUMER);
    assert.equal(attr(batch, 'messaging.batch.message_count'), 3);
    assert.deepEqual(
      (batch.links ?? []).map((l) => `${l.traceId}/${l.spanId}`).sort(),
      producers.map((p) => `${p.traceId}/${p.spanId}`).sort(),
      "the call links to every job's request",
    );
    // Each job: in its request's trace, a child of its request, linked to the call, its own outcome.
    for (const [i, run] of runs.entries()) {
      assert.ok(run);
      assert.equal(run.traceId, producers[i]?.traceId, `job ${i} in its request's trace`);
      assert.equal(run.parentSpanId, producers[i]?.spanId, `job ${i} a child of its request`);
      assert.deepEqual(
        (run.links ?? []).map((l) => `${l.traceId}/${l.spanId}`),
        [`${batch.traceId}/${batch.spanId}`],
        `job ${i} links to the call`,
      );
      assert.equal(attr(run, 'jobvisor.batch.id'), callId);
      assert.equal(attr(run, 'jobvisor.attempt'), 1);
    }
    assert.equal(attr(runs[0]!, 'jobvisor.outcome'), 'done');
    assert.equal(attr(runs[1]!, 'jobvisor.outcome'), 'failed');
    assert.equal(runs[1]?.status?.code, STATUS_ERROR);
    assert.match(runs[1]?.status?.message ?? '', /can never work/);
    assert.notEqual(runs[2]?.status?.code, STATUS_ERROR);
    assert.equal(attr(batch, 'jobvisor.outcome'), 'done', 'the call itself did not throw');

    // The task's query through ctx.db nests under the call's span.
    const query = await receiver.waitFor((all) =>
      all.find((s) => s.parentSpanId === batch.spanId && s.name.startsWith('pg.query')),
    );
    assert.equal(query.traceId, batch.traceId);
  });
});
