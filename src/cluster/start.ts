/**
 * `jobvisor start --processes N` (N ≥ 2): the primary process. It serves the
 * one metrics port, forks the supervisor processes (primary.ts), and owns the
 * signals: the first SIGTERM or SIGINT drains every child and exits 0 once
 * all have exited (each drains within `shutdown.grace`, run/shutdown.ts); a
 * second one forwards the signal, which forces each child's drain, and exits 1.
 * If the children outlive grace + margin, they are SIGKILLed, their jobs
 * handed back, and the primary exits 1.
 */
import type { Settings } from '../config/index.ts';
import type { Logger } from '../log.ts';
import type { Store } from '../queue/sql.ts';
import { SHUTDOWN_MARGIN_MS } from '../run/shutdown.ts';
import { checkTaskPaths } from '../run/task_setup.ts';
import { hangLimitMs } from './hang_watch.ts';
import { serveCluster } from './http.ts';
import { ClusterPrimary } from './primary.ts';
import type { ChildExit, ForkOptions } from './supervisor_child.ts';

/** Beyond the children's own watchdog (grace + margin): time for them to exit and for the hand-back. */
const PRIMARY_EXTRA_MS = 3000;

export interface ClusterSetup {
  settings: Settings;
  log: Logger;
  store: Store;
  processes: number;
  fork: ForkOptions;
  /** Runs last: what the command opened (pool, embedded server). */
  close(): Promise<void>;
  exit?: (code: number) => void;
}

/** Starts the primary; resolves once enough children claim ("cluster ready" is logged). */
export async function startCluster(setup: ClusterSetup): Promise<{ primary: ClusterPrimary; port: number }> {
  const { settings, log } = setup;
  const exit = setup.exit ?? ((code: number) => process.exit(code));
  checkTaskPaths(settings.tasks.dir, {});
  const primary = new ClusterPrimary({
    processes: setup.processes,
    maxJobs: settings.cluster.maxJobs,
    maxRssMb: settings.cluster.maxRssMb,
    store: setup.store,
    log,
    fork: setup.fork,
    hangLimitMs: hangLimitMs(settings.jobs.lease),
  });
  const http = await serveCluster(primary, { host: settings.metrics.host, port: settings.metrics.port });

  let signals = 0;
  let code = 0;
  const finish = async () => {
    await primary.stop();
    await http.close();
    await setup.close().catch(() => {});
    log.info({ code }, 'cluster stopped');
    exit(code);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    signals++;
    if (signals > 1) {
      log.warn({ signal }, 'second signal: forcing the supervisor processes to stop');
      code = 1;
      primary.signalAll(signal);
      return;
    }
    log.info({ signal, processes: primary.live().length }, 'draining the cluster');
    http.draining();
    const limitMs = settings.shutdown.grace + SHUTDOWN_MARGIN_MS + PRIMARY_EXTRA_MS;
    setTimeout(() => {
      log.error({ limitMs }, 'supervisor processes overran shutdown.grace: killing them');
      code = 1;
      primary.signalAll('SIGKILL');
    }, limitMs).unref();
    void finish();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

  primary.start();
  const started = performance.now();
  const need = Math.ceil(setup.processes / 2);
  // A process that exits before it claims, while fewer than `need` have, failed its
  // start (a task that cannot be loaded, no access): the cluster exits with its code,
  // as a lone `jobvisor start` would, rather than restart it forever unready.
  const failed = await new Promise<ChildExit | undefined>((resolve) => {
    let ready = 0;
    for (const c of primary.current())
      void c?.whenReady().then((ok) => {
        if (ok && ++ready === need) resolve(undefined);
        // An exit the stop asked for is not a failed start (the stop's own exit follows).
        else if (!ok && ready < need && signals === 0 && !c.drainAsked) resolve(c.exit);
      });
  });
  if (failed) {
    log.error({ ...failed }, 'a supervisor process failed to start: stopping the cluster');
    code = failed.code || 1;
    await finish();
    return { primary, port: http.port };
  }
  log.info(
    {
      primary: primary.id,
      processes: setup.processes,
      childPids: primary.live().map((c) => c.pid),
      metricsPort: http.port,
      startMs: Math.round(performance.now() - started),
    },
    'cluster ready',
  );
  return { primary, port: http.port };
}
