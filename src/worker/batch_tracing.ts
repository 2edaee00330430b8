/**
 * Tracing of a batch call. The call runs in one span, `jobvisor.batch <kind>`,
 * a root of its own with a link to each job's stored trace context (the
 * requests that enqueued them: a batch has many parents, and OpenTelemetry's
 * messaging conventions link a batch's process span to its messages). Each job
 * keeps its own span `jobvisor.run <kind>` in its own trace, as a one-job run
 * has (a child of its stored context), with a link to the batch span: from a
 * request's trace an operator reaches the call its job ran in, and from there
 * every other job of it. The task runs inside the batch span, so its own spans
 * (a provider's HTTP call, ctx.db's queries) nest under the call.
 *
 * Without a tracer provider in the thread nothing here is called (tracingOn).
 */
import type { Link, Span } from '@opentelemetry/api';
import { otelApi } from '../tracing/api.ts';
import { parseTraceContext } from '../tracing/context.ts';

export interface CallTraceInfo {
  /** The call's id (jobs.batch_id of its jobs). */
  callId: string;
  kind: string;
  queue: string;
  ids: string[];
  attempts: number[];
  /** Each job's stored trace context (JSON text), if any. */
  traceContexts: Array<string | undefined>;
}

export interface CallTrace {
  /** Runs `fn` with the batch span active. */
  run<T>(fn: () => T): T;
  /** Ends job i's span: `error` null for done, else its failure (a TaskError-like { name, message }). */
  jobEnded(i: number, error: { name: string; message: string } | null): void;
  /** Ends the batch span; `error` when the call threw. */
  end(error?: unknown): void;
}

/** Starts the call's span and one span per job linked to it. */
export function startCallTrace(info: CallTraceInfo): CallTrace {
  const { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } = otelApi();
  const tracer = trace.getTracer('jobvisor');
  const parents = info.traceContexts.map((text) => parseTraceContext(text));
  const links: Link[] = [];
  for (const parent of parents) if (parent) links.push({ context: parent });
  const attributes = {
    'messaging.system': 'jobvisor',
    'messaging.operation': 'process',
    'messaging.operation.type': 'process',
    'messaging.operation.name': 'run',
    'messaging.destination.name': info.queue,
    'jobvisor.kind': info.kind,
    'jobvisor.batch.id': info.callId,
  };
  const batch = tracer.startSpan(
    `jobvisor.batch ${info.kind}`,
    {
      kind: SpanKind.CONSUMER,
      links,
      attributes: { ...attributes, 'messaging.batch.message_count': info.ids.length },
    },
    ROOT_CONTEXT,
  );
  const toBatch: Link[] = [{ context: batch.spanContext() }];
  const jobs: Array<Span | undefined> = info.ids.map((id, i) => {
    const parent = parents[i];
    return tracer.startSpan(
      `jobvisor.run ${info.kind}`,
      {
        kind: SpanKind.CONSUMER,
        links: toBatch,
        attributes: { ...attributes, 'messaging.message.id': id, 'jobvisor.attempt': info.attempts[i] as number },
      },
      parent ? trace.setSpanContext(ROOT_CONTEXT, parent) : ROOT_CONTEXT,
    );
  });
  const active = trace.setSpan(ROOT_CONTEXT, batch);
  return {
    run: (fn) => context.with(active, fn),
    jobEnded(i, error) {
      const span = jobs[i];
      if (!span) return;
      jobs[i] = undefined;
      span.setAttribute('jobvisor.outcome', error ? 'failed' : 'done');
      if (error) {
        span.recordException({ name: error.name, message: error.message });
        span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
      }
      span.end();
    },
    end(error) {
      for (let i = 0; i < jobs.length; i++) if (jobs[i]) this.jobEnded(i, error ? describe(error) : null);
      batch.setAttribute('jobvisor.outcome', error === undefined ? 'done' : 'failed');
      if (error !== undefined) {
        const e = describe(error);
        batch.recordException(e);
        batch.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
      }
      batch.end();
    },
  };
}

function describe(error: unknown): { name: string; message: string } {
  return error instanceof Error
    ? { name: error.name, message: error.message }
    : { name: 'NonError', message: String(error) };
}
