/**
 * The primary's /metrics: every child's metrics merged by prom-client's
 * AggregatorRegistry (counters and histograms summed, the database gauges by
 * `max`: metrics/metrics.ts gives each its aggregator), plus the primary's own.
 *
 * Per-process series: the metrics in PER_CHILD get a `child` label (the slot),
 * so threads, jobs in flight and memory show per process instead of summed.
 * Retired counters: when a child exits, its counters and histograms as last
 * read (its final report after a drain) stay in the totals, so a recycle or a
 * restart does not make a counter fall back. A crashed child's counts since
 * the last scrape are lost, as a crashed lone process loses them.
 */
import { AggregatorRegistry, type Registry } from 'prom-client';
import type { MetricsJson } from './messages.ts';

export const PER_CHILD = new Set([
  'jobvisor_pool_threads',
  'jobvisor_pool_threads_busy',
  'jobvisor_pool_queue_length',
  'jobvisor_threads_stuck',
  'jobvisor_jobs_in_flight',
  'jobvisor_supervisor_draining',
  'process_resident_memory_bytes',
]);

/** `metrics` with the `child` label on the per-process series. Pure. */
export function labelChild(metrics: MetricsJson, child: string): MetricsJson {
  return metrics.map((m) =>
    PER_CHILD.has(m.name) ? { ...m, values: m.values.map((v) => ({ ...v, labels: { ...v.labels, child } })) } : m,
  );
}

/** The counters and histograms of `metrics`: what outlives its process. Pure. */
export function cumulative(metrics: MetricsJson): MetricsJson {
  return metrics.filter((m) => ['counter', 'histogram'].includes(String(m.type)));
}

/** One registry from many processes' JSON. */
export function aggregate(parts: MetricsJson[]): Registry {
  return AggregatorRegistry.aggregate(parts.filter((p) => p.length > 0));
}

/** Folds an exited child's cumulative metrics into the retired totals. */
export async function retire(retired: MetricsJson, last: MetricsJson): Promise<MetricsJson> {
  const parts = [retired, cumulative(last)].filter((p) => p.length > 0);
  if (parts.length === 0) return [];
  return await aggregate(parts).getMetricsAsJSON();
}
