/**
 * The worker thread's entry when tracing is on (see supervisor/threads.ts). A
 * thread is its own module graph with its own OpenTelemetry globals, so the SDK
 * starts here, before the worker and its `pg` load: the ESM loader hook goes in
 * first (for `pg` and `pg-pool` only), then the SDK with the `pg`
 * instrumentation, then `pg` itself through require (patched on its way in:
 * the worker's ESM import of `pg` then finds the same patched classes), so
 * ctx.db's queries become spans under the running job's span. A tracer provider registered by a preload module is kept.
 *
 * Each session starts a flush of the thread's spans when it ends (an idle
 * thread is terminated by Piscina without running exit hooks), and does not
 * wait for it: exporting is best-effort. A collector that accepts connections
 * and never answers held each session, and so its thread, for up to the
 * exporter's 10 s timeout: 240 jobs took 11.3 s instead of 1.5 s. At most one
 * flush is in flight per thread, plus one asked for while it was; the SDK's
 * queue (OTEL_BSP_MAX_QUEUE_SIZE) bounds what waits, dropping beyond it.
 */
import { createRequire, register } from 'node:module';
import { loadOptional, startTracing, type Tracing } from '../tracing/sdk.ts';
import { messageOf } from '../errors.ts';

const require = createRequire(import.meta.url);
let tracing: Tracing | undefined;
try {
  // Only the instrumented packages go through the ESM hook: wrapping every
  // module (the tasks' too) would add a way for a task to fail only when traced.
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url, { data: { include: ['pg', 'pg-pool'] } });
  const started = await startTracing(process.env, {
    instrumentations: async () => {
      const { PgInstrumentation } = await loadOptional<{
        PgInstrumentation: new (config: { requireParentSpan: boolean }) => unknown;
      }>('@opentelemetry/instrumentation-pg');
      return [new PgInstrumentation({ requireParentSpan: true })];
    },
  });
  if (started.state === 'started') tracing = started.tracing;
  require('pg');
} catch (err) {
  // Tracing must never keep a thread from running jobs.
  process.stderr.write(`jobvisor: tracing not started in a worker thread: ${messageOf(err)}\n`);
}

const worker = await import('./entry.ts');

let flushing = false;
let again = false;

/** Exports what the thread has buffered, in the background; never rejects, never waits. */
function flushSoon(t: Tracing): void {
  if (flushing) {
    again = true;
    return;
  }
  flushing = true;
  void t
    .flush()
    .catch(() => {})
    .finally(() => {
      flushing = false;
      if (again) {
        again = false;
        flushSoon(t);
      }
    });
}

export default async function session(task: Parameters<typeof worker.default>[0]): Promise<void> {
  try {
    await worker.default(task);
  } finally {
    if (tracing) flushSoon(tracing);
  }
}
