/**
 * A span per step (`jobvisor.step <name>`), a child of the active context: in
 * a run that is the run's span (tracing.ts), so steps nest under the run that
 * executed or replayed them. Without a tracer provider in this thread `fn` is
 * called directly and the API is never loaded.
 */
import { otelApi } from '../tracing/api.ts';
import { tracerRegistered } from '../tracing/sdk.ts';

let enabled: boolean | undefined;

/** Runs `fn` inside a step span when tracing is on. `replayed`: the step returned its recorded result. */
export function inStepSpan<T>(name: string, attempt: number, replayed: boolean, fn: () => Promise<T>): Promise<T> {
  enabled ??= tracerRegistered();
  if (!enabled) return fn();
  const { context, trace, SpanStatusCode } = otelApi();
  const span = trace.getTracer('jobvisor').startSpan(`jobvisor.step ${name}`, {
    attributes: { 'jobvisor.step.name': name, 'jobvisor.step.replayed': replayed, 'jobvisor.attempt': attempt },
  });
  return context.with(trace.setSpan(context.active(), span), fn).then(
    (value) => {
      span.end();
      return value;
    },
    (err: unknown) => {
      span.recordException(err instanceof Error ? err : { name: 'NonError', message: String(err) });
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
      span.end();
      throw err;
    },
  );
}
