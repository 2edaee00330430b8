/**
 * A job's trace context: the W3C Trace Context of the span that was active
 * when it was enqueued, stored as `{"traceparent": "...", "tracestate": "..."}`
 * in `jobs.trace_context`. Written here from the active span (no propagator
 * needed: the format is fixed), and read back in the worker thread.
 *
 * Only `@opentelemetry/api` is used, loaded when first needed (api.ts).
 * Without a registered context manager there is never an active span, so
 * capturing costs one property look-up and returns null.
 */
import type { SpanContext } from '@opentelemetry/api';
import { otelApi, otelRegistered } from './api.ts';

/** The active span's context as the JSON text of a trace_context value, or null. */
export function captureTraceContext(): string | null {
  // No context manager registered: no span can be active (and the API stays unloaded).
  if (!otelRegistered('context')) return null;
  const { context, isSpanContextValid, trace } = otelApi();
  const span = trace.getSpan(context.active());
  if (span === undefined) return null;
  const sc = span.spanContext();
  if (!isSpanContextValid(sc)) return null;
  const flags = (sc.traceFlags & 0xff).toString(16).padStart(2, '0');
  const traceparent = `00-${sc.traceId}-${sc.spanId}-${flags}`;
  const tracestate = sc.traceState?.serialize();
  return JSON.stringify(tracestate ? { traceparent, tracestate } : { traceparent });
}

// version-traceid-parentid-flags; a later version may append fields after a dash.
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/**
 * Reads a stored trace context (JSON text, as the claim returns it). Anything
 * unreadable gives null: a plain-SQL producer's bad value must not fail the job.
 */
export function parseTraceContext(text: string | null | undefined): SpanContext | null {
  if (!text) return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const { traceparent, tracestate } = value as { traceparent?: unknown; tracestate?: unknown };
  if (typeof traceparent !== 'string') return null;
  const m = TRACEPARENT.exec(traceparent.trim());
  if (!m) return null;
  const [, version, traceId, spanId, flags, rest] = m as unknown as [string, string, string, string, string, string?];
  // Version ff is invalid; version 00 has exactly four fields.
  if (version === 'ff' || (version === '00' && rest !== undefined)) return null;
  const { createTraceState, isSpanContextValid } = otelApi();
  const sc: SpanContext = { traceId, spanId, traceFlags: parseInt(flags, 16) & 0xff, isRemote: true };
  if (!isSpanContextValid(sc)) return null;
  if (typeof tracestate === 'string' && tracestate.length > 0 && tracestate.length <= 512)
    sc.traceState = createTraceState(tracestate);
  return sc;
}
