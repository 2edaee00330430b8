/**
 * The worker thread's entry when tracing is on (see supervisor/threads.ts). A
 * thread is its own module graph with its own OpenTelemetry globals, so the SDK
 * starts here, before the worker and its `pg` load: the ESM loader hook goes in
 * first (for `pg` and `pg-pool` only), then the SDK with the `pg`
 * instrumentation, then `pg` itself through require (patched on its way in:
 * the worker's ESM import of `pg` then finds the same patched classes), so
 * ctx.db's queries become spans under the running job's span. A tracer provider registered by a preload module is kept.
 *
 * Each session flushes the thread's spans when it ends: an idle thread is
 * terminated by Piscina without running exit hooks.
 */
import { createRequire, register } from 'node:module';
import { loadOptional, startTracing, type Tracing } from '../tracing/sdk.ts';

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
  process.stderr.write(`jobvisor: tracing not started in a worker thread: ${(err as Error).message}\n`);
}

const worker = await import('./entry.ts');

export default async function session(task: Parameters<typeof worker.default>[0]): Promise<void> {
  try {
    await worker.default(task);
  } finally {
    await tracing?.flush().catch(() => {});
  }
}
