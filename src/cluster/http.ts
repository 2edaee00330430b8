/**
 * The primary's one port: /metrics aggregated over every child (aggregate.ts),
 * /readyz for the whole, /healthz for the primary.
 *
 * Ready means: not draining, and at least half of the configured processes,
 * rounded up (1 of 2, 2 of 3, 4 of 8), answer ready themselves (database
 * reachable, schema migrated, no loop failing, not draining). One crashed
 * child of two keeps the pod ready while it restarts; a primary whose children
 * cannot start is not ready. /healthz answers while the primary's event loop
 * turns: a dead child is the primary's to restart, not a reason to kill the pod.
 * It lists the children silent for 3 s or more (`hung`: slot, pid, how long,
 * and the bound at which the primary kills them) and the last one killed as
 * hung (`lastKilled`); a hung child is the primary's to replace, so the answer
 * stays 200.
 */
import type { Readiness } from '../metrics/server.ts';
import { startHttpServer } from '../metrics/server.ts';
import { aggregate, labelChild } from './aggregate.ts';
import type { MetricsJson } from './messages.ts';
import type { ClusterPrimary } from './primary.ts';

const ASK_MS = 1500;

/** How many ready processes make the whole ready. Pure. */
export function enoughReady(processes: number): number {
  return Math.ceil(processes / 2);
}

export async function serveCluster(primary: ClusterPrimary, options: { host: string; port: number }) {
  let draining = false;
  const readiness = async (): Promise<Readiness> => {
    if (draining) return { ready: false, reason: 'draining' };
    const answers = await Promise.all(
      primary.current().map(async (c) => (c ? await c.request('readiness', ASK_MS) : undefined)),
    );
    const ready = answers.filter((a) => a?.jobvisor === 'readiness' && a.ready).length;
    primary.metrics.childrenReady.set(ready);
    const need = enoughReady(primary.processes);
    if (ready >= need) return { ready: true };
    const reasons = answers
      .map((a, slot) => (a?.jobvisor === 'readiness' && !a.ready ? `child ${slot}: ${a.reason ?? '?'}` : undefined))
      .filter(Boolean);
    return {
      ready: false,
      reason: `${ready} of ${primary.processes} supervisor processes ready, ${need} needed${reasons.length ? ` (${reasons.join('; ')})` : ''}`,
    };
  };
  const render = async () => {
    const parts: MetricsJson[] = primary.live().map((c) => labelChild(c.lastMetrics, String(c.slot)));
    parts.push(primary.retiredMetrics(), await primary.metrics.registry.getMetricsAsJSON());
    return aggregate(parts).metrics();
  };
  const http = await startHttpServer({
    host: options.host,
    port: options.port,
    registry: { contentType: primary.metrics.registry.contentType, metrics: render },
    readiness,
    health: () => ({ ...primary.hangReport() }),
    beforeScrape: async (deadlineMs) => {
      primary.metrics.children.set(primary.live().length);
      await Promise.all(primary.live().map((c) => c.request('metrics', deadlineMs)));
    },
  });
  return {
    port: http.port,
    /** /readyz answers not ready from now on. */
    draining() {
      draining = true;
    },
    close: () => http.close(),
  };
}
