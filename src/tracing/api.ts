/**
 * The OpenTelemetry API, loaded only when something has registered with it.
 *
 * Importing `@opentelemetry/api` costs about 20 ms of CPU in every thread that
 * does it: in each worker thread at boot that is time taken from the first job
 * when a pod starts on a backlog, and an application that only enqueues pays it
 * too. (The supervisor's main thread loads it anyway: prom-client requires it.)
 * An untraced thread never needs it: without a registered tracer provider there is no
 * span to start, and without a registered context manager no span is active.
 *
 * Whether anything has registered is read from the API's own global registry,
 * `globalThis[Symbol.for('opentelemetry.js.api.1')]`, where every copy of the
 * 1.x API (ESM or CommonJS, ours or the user's SDK's) records its tracer
 * provider (`trace`) and context manager (`context`). Only then is the API
 * loaded, synchronously, through `require`: the copies share that registry, so
 * the one loaded here sees what the SDK registered.
 */
import { createRequire } from 'node:module';
import type * as Api from '@opentelemetry/api';

export type OtelApi = typeof Api;

const REGISTRY = Symbol.for('opentelemetry.js.api.1');

/** Whether some copy of the API has registered a global of this type in this thread. */
export function otelRegistered(type: 'trace' | 'context'): boolean {
  const registry = (globalThis as Record<symbol, Record<string, unknown> | undefined>)[REGISTRY];
  return registry?.[type] !== undefined;
}

let api: OtelApi | undefined;

/** The API module, loaded on first use. */
export function otelApi(): OtelApi {
  api ??= createRequire(import.meta.url)('@opentelemetry/api') as OtelApi;
  return api;
}
