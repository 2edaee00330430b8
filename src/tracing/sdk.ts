/**
 * Starting the OpenTelemetry Node SDK from the standard `OTEL_*` environment.
 *
 * The SDK packages are optional dependencies, loaded only when tracing is
 * wanted. `jobvisor start` calls startTracing() on the main thread; each worker
 * thread (a separate module graph with its own globals) calls it again through
 * worker/traced_entry.ts. Where a tracer provider is already registered (the
 * user's own SDK, set up in a preload module), that one is kept.
 */
import { within } from '../within.ts';
import { otelApi, otelRegistered } from './api.ts';
import { messageOf } from '../errors.ts';

export type Env = Record<string, string | undefined>;

/**
 * Whether the environment asks for traces: an OTLP endpoint, or a traces
 * exporter other than `none`; never when OTEL_SDK_DISABLED is true. Service
 * name, sampler or protocol alone only configure an export that is asked for.
 */
export function tracingWanted(env: Env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s !== '');
  if (exporters.length > 0) return !exporters.every((s) => s === 'none');
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

/**
 * Whether a tracer provider is registered in this thread (without loading the
 * API when nothing is registered; see api.ts). A span from the no-op provider
 * has an invalid context; the probe span is never ended, so it is never
 * exported.
 */
export function tracerRegistered(): boolean {
  if (!otelRegistered('trace')) return false;
  const { isSpanContextValid, ROOT_CONTEXT, trace } = otelApi();
  return isSpanContextValid(trace.getTracer('jobvisor').startSpan('jobvisor.probe', {}, ROOT_CONTEXT).spanContext());
}

export interface Tracing {
  /** Exports what is buffered. */
  flush(): Promise<void>;
  /**
   * Exports what is buffered and stops the SDK, waiting at most `timeoutMs`
   * (default: until the exporter gives up). Resolves true when it finished in
   * time, false when it was left behind (its spans are dropped at exit).
   */
  shutdown(timeoutMs?: number): Promise<boolean>;
}

/** Longest wait for the exporter at shutdown, within what is left of shutdown.grace. */
export const TRACE_FLUSH_MAX_MS = 1000;

/** The wait for the exporter at shutdown: what is left of the grace, at most TRACE_FLUSH_MAX_MS. */
export function traceFlushBudgetMs(graceMs: number, elapsedMs: number): number {
  return Math.max(0, Math.min(TRACE_FLUSH_MAX_MS, graceMs - elapsedMs));
}

export type StartResult =
  | { state: 'off' }
  | { state: 'own-sdk' }
  | { state: 'unavailable'; error: string }
  | { state: 'started'; tracing: Tracing };

let startedHere = false;

/** The part of `@opentelemetry/sdk-node` used here: typed locally, since the package is optional. */
interface NodeSdkModule {
  NodeSDK: new (config: Record<string, unknown>) => { start(): void; shutdown(): Promise<void> };
}

/**
 * Loads an optional package by name. The name is a variable so that compiling
 * jobvisor never needs the package (the image's build stage omits optional ones).
 */
export function loadOptional<T>(name: string): Promise<T> {
  return import(name) as Promise<T>;
}

/** True once startTracing() started the SDK in this thread. */
export function tracingStarted(): boolean {
  return startedHere;
}

/**
 * Starts the Node SDK when the environment asks for it. `instrumentations`
 * are built after the SDK package loads (they are optional dependencies too).
 * Without `contextManager` no context manager is registered: the supervisor's
 * main thread needs none (its spans are roots), and the AsyncLocalStorage one
 * would put a hook on every promise of the thread that claims and completes.
 * Metrics and logs stay off unless OTEL_METRICS_EXPORTER / OTEL_LOGS_EXPORTER
 * name an exporter: jobvisor's metrics are Prometheus, its logs pino.
 */
export async function startTracing(
  env: Env,
  options: { instrumentations?: () => Promise<unknown[]>; contextManager?: boolean } = {},
): Promise<StartResult> {
  if (!tracingWanted(env)) return { state: 'off' };
  if (tracerRegistered()) return { state: 'own-sdk' };
  let NodeSDK: NodeSdkModule['NodeSDK'];
  let loaded: unknown[];
  try {
    ({ NodeSDK } = await loadOptional<NodeSdkModule>('@opentelemetry/sdk-node'));
    loaded = (await options.instrumentations?.()) ?? [];
  } catch (err) {
    return { state: 'unavailable', error: messageOf(err) };
  }
  const sdk = new NodeSDK({
    instrumentations: loaded,
    ...(options.contextManager === false ? { contextManager: null } : {}),
    ...(env.OTEL_METRICS_EXPORTER ? {} : { metricReaders: [] }),
    ...(env.OTEL_LOGS_EXPORTER ? {} : { logRecordProcessors: [] }),
  });
  sdk.start();
  startedHere = true;
  const provider = otelApi().trace.getTracerProvider() as { getDelegate?: () => { forceFlush?: () => Promise<void> } };
  return {
    state: 'started',
    tracing: {
      flush: async () => {
        await provider.getDelegate?.().forceFlush?.();
      },
      // A failed exporter shutdown has settled too: there is nothing left to wait for.
      shutdown: (timeoutMs) =>
        within(
          sdk.shutdown().catch(() => {}),
          timeoutMs,
          { unref: true },
        ),
    },
  };
}
