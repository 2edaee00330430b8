/**
 * A supervisor process under a cluster primary: the runner `jobvisor start`
 * runs, plus its side of the IPC protocol (messages.ts).
 *
 * It tells the primary its supervisor id before its first claim (so its jobs
 * can be handed back the moment it dies), reports jobs finished and resident
 * memory every second (recycling; the primary's hang watch counts on these
 * reports: the first goes out at once, and they go on until the exit, drain
 * included), answers metrics and readiness requests, and drains on the
 * primary's `drain`. Orphans: when the IPC channel closes (the primary died, even by
 * SIGKILL: the kernel closes its end) the child drains and exits by itself;
 * running jobs get the usual shutdown grace.
 *
 * Every drain goes through the process's own SIGTERM, so there is one drain
 * path (run/shutdown.ts): a later signal forces it, as for a lone supervisor.
 * That path is set from the start, not once the runner has started: a stop
 * during start-up (the primary's `drain`, or SIGTERM/SIGINT sent to the whole
 * process group) cancels the start (runner.ts `signal`), so nothing is
 * claimed after it, and the process exits 0.
 */
import type { ObservedSupervisor } from '../metrics/supervisor_http.ts';
import { startRunner, type Runner, type RunnerSetup } from '../run/runner.ts';
import { drainOnSignals } from '../run/shutdown.ts';
import type { SupervisorEvents } from '../supervisor/events.ts';
import { threadWatch } from '../supervisor/loops/thread_watch.ts';
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

/** Runs the child's supervisor; resolves once it claims, or once a stop has cancelled its start (the drain then exits). */
export async function startChild(setup: RunnerSetup): Promise<void> {
  const { log } = setup;
  let observed: ObservedSupervisor | undefined;
  let jobs = 0;
  const cancel = new AbortController();
  let signalled = false;
  process.on('SIGTERM', () => (signalled = true));
  process.on('SIGINT', () => (signalled = true));
  drainOnSignals({
    log,
    graceMs: setup.settings.shutdown.grace,
    threadsAlive: (ms) => threadWatch.end(ms),
    stop: async (reason) => {
      cancel.abort(reason);
      await runner.then(
        (r) => r.stopped,
        () => {},
      );
    },
  });
  const drain = (why: string) => {
    if (signalled) return;
    signalled = true;
    log.info({ why }, 'cluster child draining');
    process.kill(process.pid, 'SIGTERM');
  };
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

  const stats = () => void send({ jobvisor: 'stats', jobs, rssBytes: process.memoryUsage.rss() });
  stats();
  // Until the process exits, drain included: a silent child is a hung one (hang_watch.ts).
  setInterval(stats, STATS_EVERY_MS).unref();

  // Declared after the handlers above, in the same turn: no signal or message is handled before it exists.
  const runner: Promise<Runner> = startRunner({
    ...setup,
    serveMetrics: true,
    // Signals are this file's (above), from the start: the runner's own would come too late.
    handleSignals: false,
    signal: cancel.signal,
    cluster: { primary: process.env[PRIMARY_ID_ENV] ?? '?', slot: Number(process.env[CHILD_SLOT_ENV]) },
    onSupervisor: (id, events) => {
      void send({ jobvisor: 'supervisor', id });
      countFinished(events, (n) => (jobs += n));
    },
    exportMetrics: (o) => (observed = o),
    close: async () => {
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
  // A start the drain cancelled ends in its exit, whatever startRunner says.
  const started = await runner.catch((err: unknown) => {
    if (cancel.signal.aborted) return undefined;
    // A start that failed (a task that cannot be loaded, no access) exits like a lone
    // `jobvisor start`: let go of the IPC channel, which would keep this process alive.
    process.removeAllListeners('disconnect');
    process.disconnect?.();
    throw err;
  });
  if (!started || cancel.signal.aborted) return;
  stats();
  await send({ jobvisor: 'ready' });
}
