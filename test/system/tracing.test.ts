/**
 * OpenTelemetry tracing end to end: this process enqueues inside a span of its
 * own SDK; a real `jobvisor start` child, configured only by OTEL_* variables,
 * exports over real OTLP/HTTP (JSON) to a receiver on loopback. Plus the pure
 * parts: reading and writing trace_context, and when the environment asks for
 * tracing.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { context, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { enqueue, enqueueMany } from '../../src/queue/enqueue.ts';
import { captureTraceContext, parseTraceContext } from '../../src/tracing/context.ts';
import { tracingWanted } from '../../src/tracing/sdk.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';
import { attr, startOtlpReceiver, type OtlpReceiver, type OtlpSpan, tracingEnv } from '../helpers/otlp.ts';
import { runProcess } from '../helpers/cli.ts';
import { spawnSupervisor, type SpawnedSupervisor } from '../helpers/supervisor.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const SPAN_KIND_CONSUMER = 5;
const STATUS_ERROR = 2;

let db: TestDatabase;
let receiver: OtlpReceiver;
let supervisor: SpawnedSupervisor | undefined;
const provider = new NodeTracerProvider();
const tracer = () => trace.getTracer('test-producer');

before(async () => {
  provider.register();
  db = await createTestDatabase('tracing');
  receiver = await startOtlpReceiver();
});

after(async () => {
  await supervisor?.stop('SIGKILL');
  await receiver.close();
  await provider.shutdown();
  await db.drop();
});

/** The trace context column of a job, as stored. */
async function storedContext(id: string | null): Promise<Record<string, string> | null> {
  const { rows } = await db.pool.query('SELECT trace_context FROM jobvisor.jobs WHERE id = $1', [id]);
  return rows[0].trace_context as Record<string, string> | null;
}

interface PreloadSpan {
  name: string;
  traceId: string;
  parentSpanId?: string;
  mainThread: boolean;
}

/** The spans the preloaded fixture SDK wrote, one JSON line each. */
function readSpans(file: string): PreloadSpan[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as PreloadSpan);
}

const runSpans = (spans: OtlpSpan[], jobId: string | null) =>
  spans.filter((s) => s.name === 'jobvisor.run traced' && attr(s, 'messaging.message.id') === jobId);

describe('trace_context on enqueue', () => {
  it('enqueue and enqueueMany (INSERT and COPY) store the active span; nothing without one', async () => {
    const later = new Date(Date.now() + 86_400_000);
    let producer!: { traceId: string; spanId: string };
    const [single, many, copied] = await tracer().startActiveSpan('producer.request', async (span) => {
      producer = span.spanContext();
      try {
        return [
          await enqueue(db.pool, 'traced', {}, { runAt: later }),
          await enqueueMany(db.pool, [{ kind: 'traced', runAt: later }]),
          await enqueueMany(
            db.pool,
            Array.from({ length: 600 }, () => ({ kind: 'traced', runAt: later })),
          ),
        ] as const;
      } finally {
        span.end();
      }
    });
    const first = await storedContext(single.id);
    assert.deepEqual(
      first,
      { traceparent: `00-${producer.traceId}-${producer.spanId}-01` },
      'tracestate only where present',
    );
    assert.deepEqual(await storedContext(many[0]?.id ?? null), first);
    const { rows } = await db.pool.query(
      'SELECT count(DISTINCT trace_context)::int AS n, count(*)::int AS total FROM jobvisor.jobs WHERE id = ANY($1::bigint[])',
      [copied.map((r) => r.id)],
    );
    assert.deepEqual(rows[0], { n: 1, total: 600 });
    const { rows: copiedRows } = await db.pool.query('SELECT trace_context FROM jobvisor.jobs WHERE id = $1', [
      copied[0]?.id,
    ]);
    assert.deepEqual(copiedRows[0].trace_context, first);

    const outside = await context.with(ROOT_CONTEXT, () => enqueue(db.pool, 'traced', {}, { runAt: later }));
    assert.equal(await storedContext(outside.id), null);
    // Plain SQL may write the column, but only a JSON object.
    await assert.rejects(
      db.pool.query(`INSERT INTO jobvisor.jobs (kind, trace_context) VALUES ('traced', '"00-abc"')`),
      /jobs_trace_context_object/,
    );
    await db.pool.query("DELETE FROM jobvisor.jobs WHERE kind = 'traced'");
  });
});

describe('runs traced by a jobvisor start child', () => {
  before(async () => {
    supervisor = await spawnSupervisor({
      databaseUrl: db.url,
      tasksDir: FIXTURE_TASKS,
      config: {
        pool: { maxThreads: 2 },
        queues: { default: { concurrency: 10, jobsPerThread: 10 }, slow: { concurrency: 1, timeout: '300ms' } },
        backoff: { base: '50ms', max: '200ms' },
        poll: { interval: '200ms' },
      },
      env: tracingEnv(receiver),
    });
  });

  it('each attempt is a consumer span, child of the enqueuing span, with the task, pg and log inside', async () => {
    let producer!: { traceId: string; spanId: string };
    const job = await tracer().startActiveSpan('producer.request', async (span) => {
      producer = span.spanContext();
      try {
        return await enqueue(db.pool, 'traced', { failAttempts: 1 }, { maxAttempts: 3 });
      } finally {
        span.end();
      }
    });
    const [failed, done] = await receiver.waitFor((spans) => {
      const runs = runSpans(spans, job.id).sort(
        (a, b) => Number(attr(a, 'jobvisor.attempt')) - Number(attr(b, 'jobvisor.attempt')),
      );
      return runs.length >= 2 ? runs : undefined;
    });
    assert.ok(failed && done);
    for (const [i, run] of [failed, done].entries()) {
      assert.equal(run.traceId, producer.traceId, 'every attempt is in the enqueuing trace');
      assert.equal(run.parentSpanId, producer.spanId, 'child of the enqueuing span');
      assert.equal(run.kind, SPAN_KIND_CONSUMER);
      assert.equal(run.service, 'jobvisor-test');
      assert.equal(attr(run, 'messaging.system'), 'jobvisor');
      assert.equal(attr(run, 'messaging.destination.name'), 'default');
      assert.equal(attr(run, 'messaging.operation.type'), 'process');
      assert.equal(attr(run, 'jobvisor.attempt'), i + 1);
    }
    assert.notEqual(failed.spanId, done.spanId, 'each attempt has its own span');
    assert.equal(attr(failed, 'jobvisor.outcome'), 'failed');
    assert.equal(failed.status?.code, STATUS_ERROR);
    assert.match(failed.status?.message ?? '', /traced failure on attempt 1/);
    const exception = failed.events?.find((e) => e.name === 'exception');
    assert.ok(exception, 'the exception is recorded');
    assert.equal(
      exception.attributes?.find((a) => a.key === 'exception.message')?.value.stringValue,
      'traced failure on attempt 1',
    );
    assert.equal(attr(done, 'jobvisor.outcome'), 'done');
    assert.notEqual(done.status?.code, STATUS_ERROR);

    // The task's own span and ctx.db's query, nested under the attempt's span.
    const children = await receiver.waitFor((spans) => {
      const under = spans.filter((s) => s.parentSpanId === done.spanId);
      const pgQuery = under.find((s) => s.name.startsWith('pg.query'));
      const own = under.find((s) => s.name === 'fixture.own-work');
      return pgQuery && own ? { pgQuery, own } : undefined;
    });
    assert.equal(children.pgQuery.traceId, producer.traceId);
    assert.match(
      String(attr(children.pgQuery, 'db.statement') ?? attr(children.pgQuery, 'db.query.text')),
      /traced_attempt/,
    );

    // The task's log line carries the attempt's trace and span ids.
    const line = await supervisor!.waitForLog(
      /traced task running/,
      10_000,
      (l) => l.jobId === job.id && l.attempt === 2,
    );
    assert.equal(line.trace_id, producer.traceId);
    assert.equal(line.span_id, done.spanId);

    // Claims and completions are spans of their own, with batch sizes.
    const claim = receiver.spans.find((s) => s.name === 'jobvisor.claim default');
    assert.ok(claim, 'a claim span');
    assert.ok(Number(attr(claim, 'messaging.batch.message_count')) >= 1);
    const completion = await receiver.waitFor((spans) =>
      spans.find((s) => s.name === 'jobvisor.complete' && attr(s, 'jobvisor.outcome') === 'done'),
    );
    assert.ok(Number(attr(completion, 'messaging.batch.message_count')) >= 1);
    assert.ok(receiver.spans.some((s) => s.name === 'jobvisor.complete' && attr(s, 'jobvisor.outcome') === 'retried'));
  });

  it('a built-in TypeScript task runs traced too, its transaction nested under its run', async () => {
    const job = await tracer().startActiveSpan('producer.signup', async (span) => {
      try {
        return await enqueue(db.pool, 'welcome_email', { user_id: 42 });
      } finally {
        span.end();
      }
    });
    const { run, queries } = await receiver.waitFor((spans) => {
      const run = spans.find(
        (s) => s.name === 'jobvisor.run welcome_email' && attr(s, 'messaging.message.id') === job.id,
      );
      const queries = run ? spans.filter((s) => s.parentSpanId === run.spanId && s.name.startsWith('pg.query')) : [];
      return run && queries.length >= 3 ? { run, queries } : undefined;
    });
    assert.equal(attr(run, 'jobvisor.outcome'), 'done');
    assert.ok(queries.every((q) => q.traceId === run.traceId));
  });

  it('an attempt stopped by its timeout says so', async () => {
    const job = await enqueue(db.pool, 'traced', { waitMs: 10_000 }, { queue: 'slow', maxAttempts: 1 });
    const [run] = await receiver.waitFor((spans) => {
      const runs = runSpans(spans, job.id);
      return runs.length > 0 ? runs : undefined;
    });
    assert.equal(attr(run!, 'messaging.destination.name'), 'slow');
    assert.equal(attr(run!, 'jobvisor.outcome'), 'timeout');
    assert.equal(run?.status?.code, STATUS_ERROR);
  });

  it('a trace context written by plain SQL is honoured, tracestate included', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const parent = '00f067aa0ba902b7';
    const { rows } = await db.pool.query(
      `INSERT INTO jobvisor.jobs (queue, kind, payload, trace_context)
       VALUES ('default', 'traced', '{}', $1::jsonb) RETURNING id`,
      [JSON.stringify({ traceparent: `00-${traceId}-${parent}-01`, tracestate: 'vendor=abc' })],
    );
    const id = String(rows[0].id);
    const [run] = await receiver.waitFor((spans) => {
      const runs = runSpans(spans, id);
      return runs.length > 0 ? runs : undefined;
    });
    assert.equal(run?.traceId, traceId);
    assert.equal(run?.parentSpanId, parent);
    assert.equal(run?.traceState, 'vendor=abc');
  });

  it('a job without a trace context, or with an unreadable one, still runs in a new trace', async () => {
    const { rows } = await db.pool.query(
      `INSERT INTO jobvisor.jobs (queue, kind, payload, trace_context)
       VALUES ('default', 'traced', '{}', NULL), ('default', 'traced', '{}', '{"traceparent": "not one"}') RETURNING id`,
    );
    for (const { id } of rows as Array<{ id: string }>) {
      const [run] = await receiver.waitFor((spans) => {
        const runs = runSpans(spans, String(id));
        return runs.length > 0 ? runs : undefined;
      });
      assert.equal(run?.parentSpanId || undefined, undefined, 'a root span');
      assert.equal(attr(run!, 'jobvisor.outcome'), 'done');
    }
    await until(
      'no job pending or running',
      async () =>
        (await db.pool.query("SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status IN ('pending', 'running')"))
          .rows[0].n,
      (n) => n === 0,
      10_000,
    );
    // Nothing the worker or the SDK wrote went outside the JSON log.
    assert.deepEqual(
      supervisor!.logs.filter((l) => 'raw' in l || l.level === 50),
      [],
    );
  });
});

describe("a user's own SDK, preloaded", () => {
  it("is kept: jobvisor starts none, and its run spans go to the user's provider from the worker thread", async () => {
    await supervisor?.stop();
    supervisor = undefined;
    const spansFile = path.join(mkdtempSync(path.join(tmpdir(), 'jobvisor-otel-')), 'spans.jsonl');
    const preload = path.join(FIXTURE_TASKS, '../otel-preload.mjs');
    supervisor = await spawnSupervisor({
      databaseUrl: db.url,
      tasksDir: FIXTURE_TASKS,
      config: { pool: { maxThreads: 1 }, poll: { interval: '200ms' } },
      env: {
        NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${preload}`.trim(),
        TEST_SPANS_FILE: spansFile,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_SERVICE_NAME: 'jobvisor-own-sdk',
      },
    });
    const on = await supervisor.waitForLog(/OpenTelemetry tracing on/);
    assert.equal(on.sdk, 'own-sdk');
    let producer!: { traceId: string; spanId: string };
    const job = await tracer().startActiveSpan('producer.request', async (span) => {
      producer = span.spanContext();
      try {
        return await enqueue(db.pool, 'traced', {});
      } finally {
        span.end();
      }
    });
    const lines = await until(
      'the run span in the preloaded exporter',
      () => Promise.resolve(readSpans(spansFile)),
      (spans) => spans.some((s) => s.name === 'jobvisor.run traced'),
      15_000,
    );
    const run = lines.find((s) => s.name === 'jobvisor.run traced');
    assert.deepEqual(run, {
      name: 'jobvisor.run traced',
      traceId: producer.traceId,
      parentSpanId: producer.spanId,
      mainThread: false,
    });
    assert.ok(lines.some((s) => s.name === 'jobvisor.claim default' && s.mainThread));
    await until(
      'job done',
      async () => (await db.pool.query('SELECT status FROM jobvisor.jobs WHERE id = $1', [job.id])).rows[0].status,
      (status) => status === 'done',
      10_000,
    );
    assert.equal(
      receiver.spans.filter((s) => s.service === 'jobvisor-own-sdk').length,
      0,
      'jobvisor exported nothing itself',
    );
  });
});

describe('trace context values', () => {
  it('reads W3C traceparent and tracestate, and refuses what is not one', () => {
    const tp = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const sc = parseTraceContext(JSON.stringify({ traceparent: tp, tracestate: 'a=1,b=2' }));
    assert.equal(sc?.traceId, '4bf92f3577b34da6a3ce929d0e0e4736');
    assert.equal(sc?.spanId, '00f067aa0ba902b7');
    assert.equal(sc?.traceFlags, 1);
    assert.equal(sc?.isRemote, true);
    assert.equal(sc?.traceState?.get('b'), '2');
    assert.equal(parseTraceContext(JSON.stringify({ traceparent: tp }))?.traceState, undefined);
    // A later version may add fields; version 00 may not.
    assert.ok(parseTraceContext(JSON.stringify({ traceparent: `01${tp.slice(2)}-later` })));
    for (const bad of [
      null,
      '',
      'not json',
      '[]',
      '{}',
      JSON.stringify({ traceparent: 7 }),
      JSON.stringify({ traceparent: `${tp}-extra` }),
      JSON.stringify({ traceparent: `ff${tp.slice(2)}` }),
      JSON.stringify({ traceparent: '00-00000000000000000000000000000000-00f067aa0ba902b7-01' }),
      JSON.stringify({ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01' }),
      JSON.stringify({ traceparent: tp.toUpperCase() }),
    ])
      assert.equal(parseTraceContext(bad), null, String(bad));
  });

  it('captures nothing without an active span, and round-trips what it captures', () => {
    assert.equal(
      context.with(ROOT_CONTEXT, () => captureTraceContext()),
      null,
    );
    tracer().startActiveSpan('x', (span) => {
      const text = captureTraceContext();
      span.end();
      const { traceId, spanId, traceFlags } = span.spanContext();
      assert.deepEqual(parseTraceContext(text), { traceId, spanId, traceFlags, isRemote: true });
    });
  });

  it('tracing is wanted when an OTLP endpoint or a traces exporter is set', () => {
    assert.equal(tracingWanted({}), false);
    assert.equal(tracingWanted({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' }), false);
    assert.equal(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }), true);
    assert.equal(tracingWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' }), true);
    assert.equal(tracingWanted({ OTEL_TRACES_EXPORTER: 'otlp' }), true);
    assert.equal(tracingWanted({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c' }), false);
    assert.equal(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_SDK_DISABLED: 'true' }), false);
  });

  it('an untraced process never loads the API: not to enqueue, nor to run or log a job in a worker thread', async () => {
    // A fresh process (this one has a provider registered): the modules a worker
    // thread and an enqueuing application load, then what they call per job.
    const script = `
      import { createRequire } from 'node:module';
      await import(${JSON.stringify(path.join(root, 'src/queue/enqueue.ts'))});
      await import(${JSON.stringify(path.join(root, 'src/tracing/sdk.ts'))});
      const { captureTraceContext } = await import(${JSON.stringify(path.join(root, 'src/tracing/context.ts'))});
      const { runTask, traceLogFields } = await import(${JSON.stringify(path.join(root, 'src/worker/tracing.ts'))});
      const ran = await runTask((p) => p, 'ran', { id: '1', kind: 'k', queue: 'q', attempt: 1, signal: new AbortController().signal }, undefined);
      const loaded = Object.keys(createRequire(import.meta.url).cache).filter((k) => k.includes('@opentelemetry'));
      console.log(JSON.stringify({ capture: captureTraceContext(), fields: traceLogFields(), ran, loaded }));`;
    const { code, stdout, stderr } = await runProcess(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      { env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: '' }, cwd: root },
    );
    assert.equal(code, 0, stderr);
    assert.deepEqual(JSON.parse(stdout), { capture: null, fields: {}, ran: 'ran', loaded: [] });
  });
});
