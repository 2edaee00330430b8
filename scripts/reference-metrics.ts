/**
 * docs/reference/metrics.md from the metrics registries (src/metrics/metrics.ts):
 * every metric a supervisor exports, and those the cluster primary adds, with
 * its type, labels and help, read from fresh registries.
 */
import type { Registry } from 'prom-client';
import { createClusterMetrics, createMetrics } from '../src/metrics/metrics.ts';
import { generatedHeader, table } from './reference-markdown.ts';

export async function metricsPage(): Promise<string> {
  return [
    generatedHeader('src/metrics/metrics.ts'),
    '# Metrics',
    '',
    'Each supervisor serves these on `GET /metrics` (`metrics.port`, default 9464) with the `jobvisor_`',
    "prefix, beside prom-client's default process and Node.js metrics (`process_*`, `nodejs_*`,",
    'unprefixed, as every Node.js exporter names them). Counters and histograms are per process:',
    'aggregate them with `sum`. Gauges read from the database (`jobvisor_jobs`,',
    '`jobvisor_oldest_pending_seconds`) are the same on every replica: aggregate them with `max`.',
    '',
    '## Supervisor',
    '',
    await metricsTable(createMetrics({ defaultMetrics: false }).registry),
    '',
    '## Cluster primary',
    '',
    'Added by the primary of `jobvisor start --processes N` to the aggregated `/metrics` of its children.',
    '',
    await metricsTable(createClusterMetrics().registry),
    '',
  ].join('\n');
}

async function metricsTable(registry: Registry): Promise<string> {
  const labels = new Map(
    registry.getMetricsAsArray().map((m) => [m.name, (m as unknown as { labelNames: string[] }).labelNames]),
  );
  const rows = (await registry.getMetricsAsJSON()).map((m) => [
    `\`${m.name}\``,
    String(m.type),
    (labels.get(m.name) ?? []).map((l) => `\`${l}\``).join(', ') || '—',
    m.help,
  ]);
  const buckets = registry.getMetricsAsArray().flatMap((m) => {
    const bounds = (m as unknown as { upperBounds?: number[] }).upperBounds;
    return bounds ? [`\`${m.name}\`: ${bounds.join(', ')}`] : [];
  });
  return [
    table(['name', 'type', 'labels', 'help'], rows),
    ...(buckets.length > 0
      ? ['', 'Histogram buckets (upper bounds, seconds):', '', ...buckets.map((b) => `- ${b}`)]
      : []),
  ].join('\n');
}
