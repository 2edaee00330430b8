/**
 * The IPC protocol between the cluster primary and its supervisor children
 * (`child_process.fork`, JSON over the channel). Every message carries
 * `jobvisor` so that anything else on the channel is ignored.
 *
 * child → primary
 *   supervisor  its supervisor id (`locked_by`), sent before its first claim
 *   ready       startRunner resolved: it claims jobs
 *   stats       every second: jobs finished so far and resident memory
 *   metrics     the answer to a metrics request (prom-client JSON)
 *   readiness   the answer to a readiness request
 * primary → child
 *   metrics, readiness   requests, answered with the same `seq`
 *   drain                stop claiming, drain and exit 0 (recycling, shutdown)
 */
import type { MetricObjectWithValues, MetricValue } from 'prom-client';

export type MetricsJson = Array<MetricObjectWithValues<MetricValue<string>>>;

export type ChildMessage =
  | { jobvisor: 'supervisor'; id: string }
  | { jobvisor: 'ready' }
  | { jobvisor: 'stats'; jobs: number; rssBytes: number }
  | { jobvisor: 'metrics'; seq: number; metrics: MetricsJson; final?: boolean }
  | { jobvisor: 'readiness'; seq: number; ready: boolean; reason?: string };

export type PrimaryMessage =
  { jobvisor: 'metrics'; seq: number } | { jobvisor: 'readiness'; seq: number } | { jobvisor: 'drain' };

/** The environment variable that makes `jobvisor start` a child: its slot number. */
export const CHILD_SLOT_ENV = 'JOBVISOR_CLUSTER_SLOT';
/** The environment variable naming the child's primary (the supervisors table groups by it). */
export const PRIMARY_ID_ENV = 'JOBVISOR_CLUSTER_PRIMARY';

export function isChildMessage(m: unknown): m is ChildMessage {
  return typeof m === 'object' && m !== null && typeof (m as { jobvisor?: unknown }).jobvisor === 'string';
}
export const isPrimaryMessage = isChildMessage as (m: unknown) => m is PrimaryMessage;
