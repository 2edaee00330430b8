/**
 * A supervisor process under a cluster primary: the runner `jobvisor start`
 * runs, plus its side of the IPC protocol (messages.ts).
 *
 * It tells the primary its supervisor id before its first claim (so its jobs
 * can be handed back the moment it dies), reports jobs finished and resident
 * memory every second (recycling), answers metrics and readiness requests, and
 * drains on the primary's `drain`. Orphans: when the IPC channel closes (the
 * primary died, even by SIGKILL: the kernel closes its end) the child drains
 * and exits by itself; running jobs get the usual shutdown grace.
 *
 * Every drain goes through the process's own SIGTERM, so there is one drain
 * path (run/shutdown.ts): a later signal forces it, as for a lone supervisor.
 */
import type { ObservedSupervisor } from '../metrics/supervisor-http.ts';
import { startRunner, type RunnerSetup } from '../run/runner.ts';
import type { SupervisorEvents } from '../supervisor/events.ts';
import {
  CHILD_SLOT_ENV,
  isPrimaryMessage,
  PRIMARY_ID_ENV,
  type ChildMessage,
  type PrimaryMessage,
} from './messages.ts';

const STATS_EVERY_MS = 1000;
const SCRAPE_DEADLINE_MS = 1500;
const FINAL_SEND_MS = 1000;

function send(message: ChildMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.connected || !process.send) return resolve();
    const timer = setTimeout(resolve, FINAL_SEND_MS);
    process.send(message, undefined, {}, () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

function countFinished(events: SupervisorEvents, add: (n: number) => void): void {
  const count = (b: { jobs: unknown[] }) => add(b.jobs.length);
  events.on('job:completed', count);
  events.on('job:retried', count);
  events.on('job:dead', count);
}

/** Runs the child's supervisor; resolves once it claims (the process then lives until drained). */
export async function startChild(setup: RunnerSetup): Promise<void> {
  const { log } = setup;
  let observed: ObservedSupervisor | undefined;
  let jobs = 0;
  let draining = false;
  let started = false;
  let identified = false;
  let drainWhenStarted: string | undefined;
  const drain = (why: string) => {
    if (draining) return;
    // Before the runner handles signals: no supervisor yet: exit at once; else drain once it can.
    if (!identified) process.exit(0);
    if (!started) {
      drainWhenStarted = why;
      return;
    }
    draining = true;
    log.info({ why }, 'cluster child draining');
    process.kill(process.pid, 'SIGTERM');
  };
  process.on('SIGTERM', () => (draining = true));
  process.on('SIGINT', () => (draining = true));
  // The primary is gone (crashed, killed): nobody would restart or drain us.
  process.on('disconnect', () => drain('the primary process is gone'));

  const answer = async (m: PrimaryMessage) => {
    switch (m.jobvisor) {
      case 'drain':
        return drain('asked by the primary');
      case 'metrics': {
        if (!observed) return send({ jobvisor: 'metrics', seq: m.seq, metrics: [] });
        await observed.beforeScrape(SCRAPE_DEADLINE_MS).catch(() => {});
        return send({ jobvisor: 'metrics', seq: m.seq, metrics: await observed.metrics.registry.getMetricsAsJSON() });
      }
      case 'readiness': {
        const r = observed ? await observed.readiness() : { ready: false, reason: 'starting' };
        return send({ jobvisor: 'readiness', seq: m.seq, ready: r.ready, reason: r.reason });
      }
    }
  };
  process.on('message', (m: unknown) => {
    if (isPrimaryMessage(m)) void answer(m).catch((err: unknown) => log.warn({ err }, 'cluster message failed'));
  });

  const stats = setInterval(
    () => void send({ jobvisor: 'stats', jobs, rssBytes: process.memoryUsage.rss() }),
    STATS_EVERY_MS,
  );
  stats.unref();

  await startRunner({
    ...setup,
    serveMetrics: true,
    cluster: { primary: process.env[PRIMARY_ID_ENV] ?? '?', slot: Number(process.env[CHILD_SLOT_ENV]) },
    onSupervisor: (id, events) => {
      identified = true;
      void send({ jobvisor: 'supervisor', id });
      countFinished(events, (n) => (jobs += n));
    },
    exportMetrics: (o) => (observed = o),
    close: async () => {
      clearInterval(stats);
      await setup.close?.();
      // The counters as they end, so the primary's totals do not fall back when this process goes.
      if (observed)
        await send({
          jobvisor: 'metrics',
          seq: -1,
          final: true,
          metrics: await observed.metrics.registry.getMetricsAsJSON(),
        });
    },
  });
  started = true;
  if (drainWhenStarted !== undefined) return drain(drainWhenStarted);
  await send({ jobvisor: 'stats', jobs, rssBytes: process.memoryUsage.rss() });
  await send({ jobvisor: 'ready' });
}
