/**
 * Tracing in the worker thread: each attempt runs inside a consumer span
 * `jobvisor.run <kind>`, and the task inside that span's context, so the
 * task's own spans and auto-instrumented libraries (ctx.db's `pg`) nest under
 * it in the thread that runs them.
 *
 * The run span is a CHILD of the context stored with the job (the request
 * that enqueued it), not a new trace linked to it: one job is one message with
 * one producer, and operators want one trace from the request to the task that
 * ran it. Each attempt is its own span, a sibling under the same parent.
 *
 * A run that ends in ctx.sleep or ctx.waitFor is not a failure: its span's
 * outcome is `parked`, with `jobvisor.park.kind` (sleep, wait) and
 * `jobvisor.park.name`, and no error status.
 *
 * Without a tracer provider in this thread the task is called directly: no
 * span, no context, no closure, and the API is never loaded (tracing/api.ts).
 */
import type { Span, Tracer } from '@opentelemetry/api';
import { otelApi, otelRegistered } from '../tracing/api.ts';
import { parseTraceContext } from '../tracing/context.ts';
import { tracerRegistered } from '../tracing/sdk.ts';

export interface RunInfo {
  id: string;
  kind: string;
  queue: string;
  attempt: number;
  readonly signal: AbortSignal;
  controller?: AbortController;
  /** The run's durable steps (steps.ts): a run that slept or waited ended there, not in a failure. */
  readonly durable?: { readonly park: { kind: 'sleep' | 'wait'; name: string } | undefined };
}

let enabled: boolean | undefined;
let tracer: Tracer | undefined;

/** Decided at the first job: worker/traced_entry.ts has started the SDK by then, or a preload has. */
export function tracingOn(): boolean {
  enabled ??= tracerRegistered();
  return enabled;
}

/** Runs `task(payload, run)`, inside a run span when tracing is on. */
export function runTask<R extends RunInfo>(
  task: (payload: unknown, ctx: R) => unknown,
  payload: unknown,
  run: R,
  traceContext: string | undefined,
): unknown {
  if (!tracingOn()) return task(payload, run);
  return runInSpan(task, payload, run, traceContext);
}

async function runInSpan<R extends RunInfo>(
  task: (payload: unknown, ctx: R) => unknown,
  payload: unknown,
  run: R,
  traceContext: string | undefined,
): Promise<unknown> {
  const { context, ROOT_CONTEXT, SpanKind, trace } = otelApi();
  const remote = parseTraceContext(traceContext);
  const parent = remote ? trace.setSpanContext(ROOT_CONTEXT, remote) : ROOT_CONTEXT;
  tracer ??= trace.getTracer('jobvisor');
  const span = tracer.startSpan(
    `jobvisor.run ${run.kind}`,
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        'messaging.system': 'jobvisor',
        'messaging.operation': 'process',
        'messaging.operation.type': 'process',
        'messaging.operation.name': 'run',
        'messaging.destination.name': run.queue,
        'messaging.message.id': run.id,
        'jobvisor.kind': run.kind,
        'jobvisor.attempt': run.attempt,
      },
    },
    parent,
  );
  try {
    const result = await context.with(trace.setSpan(parent, span), task, undefined, payload, run);
    if (!parked(span, run)) span.setAttribute('jobvisor.outcome', 'done');
    return result;
  } catch (err) {
    if (!parked(span, run)) fail(span, err, run);
    throw err;
  } finally {
    span.end();
  }
}

/** A run that slept or waited: outcome `parked` (not an error), with what it parked in. */
function parked(span: Span, run: RunInfo): boolean {
  const park = run.durable?.park;
  if (!park) return false;
  span.setAttributes({
    'jobvisor.outcome': 'parked',
    'jobvisor.park.kind': park.kind,
    'jobvisor.park.name': park.name,
  });
  return true;
}

function fail(span: Span, err: unknown, run: RunInfo): void {
  const aborted = run.controller?.signal.aborted === true;
  const reason = aborted ? (run.controller?.signal.reason as Error | undefined) : undefined;
  span.setAttribute('jobvisor.outcome', reason?.name === 'TimeoutError' ? 'timeout' : aborted ? 'aborted' : 'failed');
  if (err instanceof Error) span.recordException(err);
  else span.recordException({ name: 'NonError', message: String(err) });
  span.setStatus({ code: otelApi().SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
}

/** pino mixin: the active span's ids on every line written inside a task. */
export function traceLogFields(): Record<string, string> {
  if (!otelRegistered('context')) return {};
  const { context, trace } = otelApi();
  const span = trace.getSpan(context.active());
  if (span === undefined) return {};
  const sc = span.spanContext();
  return { trace_id: sc.traceId, span_id: sc.spanId };
}
