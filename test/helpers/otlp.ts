/**
 * A small OTLP/HTTP receiver on loopback: accepts `POST /v1/traces` in the
 * JSON encoding (OTEL_EXPORTER_OTLP_PROTOCOL=http/json) and keeps the spans.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}

export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  traceState?: string;
  name: string;
  kind: number;
  attributes?: Array<{ key: string; value: OtlpValue }>;
  status?: { code?: number; message?: string };
  events?: Array<{ name: string; attributes?: Array<{ key: string; value: OtlpValue }> }>;
  links?: Array<{ traceId: string; spanId: string; traceState?: string }>;
  /** From the resource: which service sent it. */
  service?: string;
}

export interface OtlpReceiver {
  endpoint: string;
  spans: OtlpSpan[];
  /** Resolves with the spans once `ready(spans)` returns a value; rejects after timeoutMs. */
  waitFor<T>(ready: (spans: OtlpSpan[]) => T | undefined, timeoutMs?: number): Promise<T>;
  close(): Promise<void>;
}

/**
 * The environment that turns a supervisor's tracing on, exporting to this
 * receiver as `service`, every run sampled and spans sent within 100 ms.
 */
export function tracingEnv(receiver: OtlpReceiver, service = 'jobvisor-test'): Record<string, string> {
  return {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_SERVICE_NAME: service,
    OTEL_TRACES_SAMPLER: 'always_on',
    OTEL_BSP_SCHEDULE_DELAY: '100',
  };
}

/** An attribute's value as a plain string, number or boolean. */
export function attr(span: OtlpSpan, key: string): string | number | boolean | undefined {
  const v = span.attributes?.find((a) => a.key === key)?.value;
  if (!v) return undefined;
  if (v.intValue !== undefined) return Number(v.intValue);
  return v.stringValue ?? v.boolValue ?? v.doubleValue;
}

interface ExportRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: Array<{ key: string; value: OtlpValue }> };
    scopeSpans?: Array<{ spans?: OtlpSpan[] }>;
  }>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: OtlpSpan[] = [];
  const waiters = new Set<() => void>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ExportRequest;
      for (const rs of body.resourceSpans ?? []) {
        const service = rs.resource?.attributes?.find((a) => a.key === 'service.name')?.value.stringValue;
        for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) spans.push({ ...s, service });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      for (const w of waiters) w();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    waitFor<T>(ready: (spans: OtlpSpan[]) => T | undefined, timeoutMs = 20_000): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        const check = () => {
          const value = ready(spans);
          if (value === undefined) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(value);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`spans not received within ${timeoutMs} ms (have ${spans.map((s) => s.name).join(', ')})`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
