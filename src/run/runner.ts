/**
 * A supervisor with everything `jobvisor start` wires around it: the start-up
 * warnings, the check of the app's tasks, migrations when asked, tracing, the
 * event logs, metrics and probes when served, signal handling when asked.
 * run() (run.ts) and `jobvisor start` (cli/start.ts) both start one here.
 *
 * States: starting → running → stopping → stopped. startRunner() resolves in
 * `running`, once the supervisor listens and has made its first claims; before
 * that it waits, not ready, for the database and the migrated schema (logged
 * once). A database that refuses this process for good (a wrong password, a
 * missing database or grant) ends the wait: everything is stopped and
 * startRunner() rejects with DatabaseAccessError. stop() drains (the
 * supervisor's shutdown rule), then closes what the runner opened, then what
 * the caller handed it to close; it is idempotent and resolves when all of
 * that is done.
 *
 * `signal` (a cluster child's): aborting it stops the runner at any time; during
 * start-up the task checks end at once, nothing is claimed, and startRunner
 * resolves with the runner already stopping.
 *
 * A pool the caller gave (run({ pool })) and ends while the runner runs stops
 * the runner, with one line that says why: it drains as stop() does, writing
 * outcomes and hand-backs through the connection it holds for the heartbeat
 * (db/held.ts), then hands that connection back, so the pool's end() resolves
 * once the drain is done (at most `shutdown.grace` and the flush).
 */
import type pg from 'pg';
import { connectionBudget, effectiveQueueLimits, type Settings } from '../config/index.ts';
import { migrate } from '../db/migrate.ts';
import { accessRefused, type DatabaseAccessError } from '../errors.ts';
import { watchPoolEnd } from '../db/pool_ended.ts';
import { safeUrl, type Logger } from '../log.ts';
import { createMetrics } from '../metrics/metrics.ts';
import { DatabaseProbe } from '../metrics/readiness.ts';
import type { Readiness } from '../metrics/server.ts';
import { observeSupervisor, serveSupervisor, type ObservedSupervisor } from '../metrics/supervisor_http.ts';
import type { SupervisorEvents } from '../supervisor/events.ts';
import { Supervisor } from '../supervisor/supervisor.ts';
import { threadWatch } from '../supervisor/loops/thread_watch.ts';
import { startTracing, traceFlushBudgetMs, tracerRegistered, type StartResult } from '../tracing/sdk.ts';
import { VERSION } from '../version.ts';
import { logEvents } from './logging.ts';
import { drainFromStartup } from './shutdown.ts';
import { checkTaskModules, checkTaskPaths } from './task_setup.ts';
import { traceEvents } from './trace_events.ts';

const READY_RETRY_MS = 1000;
/** The stop reason (and the log line's) when the caller ends the pool it gave under the runner. */
export const POOL_ENDED = 'the pg.Pool given to run() was ended while the runner was running';

export interface RunnerSetup {
  settings: Settings;
  /** The pool claims and outcomes use; ended by stop() only when `ownsPool`. */
  pool: pg.Pool;
  ownsPool: boolean;
  /** For LISTEN, the probes and the tasks' ctx.db. */
  databaseUrl: string;
  log: Logger;
  /** The app's tasks by kind (absolute paths). */
  taskFiles: Record<string, string>;
  /** Serve /metrics, /healthz and /readyz on settings.metrics.{host,port}. */
  serveMetrics: boolean;
  migrate: boolean;
  /** The pool migrations take their advisory lock on: a direct connection when `pool` goes through a pooler. */
  migratePool?: pg.Pool;
  handleSignals: boolean;
  /** true: start the OpenTelemetry SDK from OTEL_* (jobvisor start); false: trace only if the app registered one. */
  startSdk: boolean;
  /** Runs last in stop(): what the caller owns (the command's embedded server). */
  close?: () => Promise<void>;
  /** Called with the supervisor's id and events once it exists, before its first claim (a cluster child tells its primary). */
  onSupervisor?: (id: string, events: SupervisorEvents) => void;
  /** Under a cluster primary: its id and this process's slot (the supervisors table groups by them). */
  cluster?: { primary: string; slot: number };
  /** With serveMetrics: hand the metrics and readiness to this instead of serving HTTP (a cluster child). */
  exportMetrics?: (observed: ObservedSupervisor) => void;
  /** Aborting it stops the runner, cancelling a start in progress: see the file comment. */
  signal?: AbortSignal;
}

/** Calls `then` once `signal` is aborted (at once if it already is). */
function whenAborted(signal: AbortSignal | undefined, then: (reason: string) => void): () => void {
  const call = () => then(String(signal?.reason ?? 'stop requested'));
  if (signal?.aborted) call();
  else signal?.addEventListener('abort', call, { once: true });
  return () => signal?.removeEventListener('abort', call);
}

/** A running supervisor, as run() returns it. */
export interface Runner {
  /** The supervisor's id (`locked_by` of its jobs, the `supervisors` table). */
  readonly id: string;
  /** The typed event map (`job:completed`, `job:dead`, …). */
  readonly events: SupervisorEvents;
  /** The port /metrics is served on, when asked for (`metrics: { port }`); else undefined. */
  readonly metricsPort: number | undefined;
  /** Resolves once the runner has stopped, whoever stopped it. */
  readonly stopped: Promise<void>;
  /** The graceful drain (like SIGTERM); resolves when drained and closed. Idempotent. */
  stop(reason?: string): Promise<void>;
}

async function tracingFor(setup: RunnerSetup): Promise<StartResult> {
  if (!setup.startSdk) return tracerRegistered() ? { state: 'own-sdk' } : { state: 'off' };
  // OpenTelemetry from the OTEL_* environment: before the thread pool exists.
  const otel = await startTracing(process.env, { contextManager: false });
  if (otel.state === 'unavailable')
    setup.log.warn({ error: otel.error }, 'OTEL_* is set but the OpenTelemetry SDK is not installed');
  else if (otel.state !== 'off') setup.log.info({ sdk: otel.state }, 'OpenTelemetry tracing on');
  return otel;
}

/**
 * Starts a supervisor; see the file comment.
 * @throws TaskSetupError when an app task cannot run, DatabaseAccessError when the
 *   database refuses this process for good (nothing is left running).
 */
export async function startRunner(setup: RunnerSetup): Promise<Runner> {
  const { settings, log } = setup;
  // A queue whose concurrency the threads cannot reach: one line each, naming the limit and the key.
  for (const warning of effectiveQueueLimits(settings).warnings) log.warn(warning);
  checkTaskPaths(settings.tasks.dir, setup.taskFiles);
  const otel = await tracingFor(setup);
  const supervisor = new Supervisor({
    settings,
    databaseUrl: setup.databaseUrl,
    log,
    pool: setup.pool,
    taskFiles: setup.taskFiles,
    cluster: setup.cluster,
  });
  setup.onSupervisor?.(supervisor.id, supervisor.events);
  // From here every way out takes these handlers off again or exits through them.
  const signals = setup.handleSignals
    ? drainFromStartup({ log, graceMs: settings.shutdown.grace, threadsAlive: (ms) => threadWatch.end(ms) })
    : undefined;
  // Aborted by the caller's signal or, with handleSignals, by SIGTERM/SIGINT.
  const cancelled = signals ? AbortSignal.any([signals.signal, ...(setup.signal ? [setup.signal] : [])]) : setup.signal;
  // Stopped before it claims: the task checks (imports in the options thread) answer at once.
  const cancelChecks = whenAborted(cancelled, () => void supervisor.stop('start-up cancelled'));
  let stopAskedAt = 0;
  // Best-effort: a collector that never answers gets what is left of the grace, at most 1 s.
  const endTracing = async () => {
    if (otel.state !== 'started') return;
    const budgetMs = traceFlushBudgetMs(settings.shutdown.grace, stopAskedAt ? performance.now() - stopAskedAt : 0);
    if (!(await otel.tracing.shutdown(budgetMs).catch(() => false)))
      log.warn({ waitedMs: budgetMs }, 'trace export did not finish: spans not yet sent are dropped');
  };
  let kinds: string[];
  try {
    kinds = await checkTaskModules(settings.tasks.dir, setup.taskFiles, (kind) => supervisor.checkTask(kind));
    // Imported already: their options (queue defaults for enqueue in this process) are known before run() resolves.
    await supervisor.readTasks(kinds);
    if (setup.migrate)
      await migrate(setup.migratePool ?? setup.pool, { schema: settings.database.schema, log, signal: cancelled });
  } catch (err) {
    await supervisor.stop('start-up failed');
    if (setup.ownsPool) await setup.pool.end().catch(() => {});
    await endTracing();
    await setup.close?.();
    // Given up for a signal: its drain exits the process now.
    if (signals?.signal.aborted) {
      signals.settle();
      return new Promise<never>(() => {});
    }
    signals?.remove();
    // The migrations' connection may be the first one refused (a wrong password).
    throw accessRefused(err) ?? err;
  }

  servedKinds(setup, kinds);
  logEvents(supervisor.events, log.child({ supervisor: supervisor.id }));
  if (otel.state === 'started' || otel.state === 'own-sdk') traceEvents(supervisor.events, supervisor.id);
  const served = setup.serveMetrics
    ? await serve(setup, supervisor).catch((err: unknown) => {
        signals?.remove();
        throw err;
      })
    : undefined;
  const probe = served ? undefined : new DatabaseProbe({ url: setup.databaseUrl, schema: settings.database.schema });
  const readiness = served?.readiness ?? (() => probe?.check() as Promise<Readiness>);

  const onStuck = (e: { threadId: number; stuck: number }) => {
    log.error(e, 'worker thread terminated but still alive: blocked in a synchronous call?');
    supervisor.events.emit('thread:stuck', e);
  };
  const onGone = (e: { threadId: number; stuck: number }) => supervisor.events.emit('thread:unstuck', e);
  threadWatch.on('stuck', onStuck);
  threadWatch.on('gone', onGone);

  let stopping: Promise<void> | undefined;
  let resolveStopped!: () => void;
  const stopped = new Promise<void>((resolve) => (resolveStopped = resolve));
  const stop = (reason = 'stop requested'): Promise<void> => {
    stopping ??= (async () => {
      unwatchPool?.();
      stopAskedAt = performance.now();
      await supervisor.stop(reason);
      threadWatch.off('stuck', onStuck);
      threadWatch.off('gone', onGone);
      await served?.close();
      await probe?.close();
      if (setup.ownsPool) await setup.pool.end().catch(() => {});
      await endTracing();
      await setup.close?.();
      // A signal's drain ends in process.exit (shutdown.ts), which needs its handlers to stay.
      if (!signals?.signal.aborted) signals?.remove();
      resolveStopped();
    })();
    return stopping;
  };
  cancelChecks();
  // The caller's pool ended under the runner: stop (see the file comment), said once.
  const unwatchPool = setup.ownsPool
    ? undefined
    : watchPoolEnd(setup.pool, () => {
        log.error(
          { inFlight: supervisor.inFlight() },
          `${POOL_ENDED}: stopping (stop the runner before ending its pool)`,
        );
        void stop(POOL_ENDED);
      });
  // After everything stop() reads is declared: an abort that came during start-up stops at once.
  whenAborted(cancelled, (reason) => void stop(reason));
  signals?.settle(stop);

  // Wait for the database and the schema before claiming anything.
  let warned = false;
  let refused: DatabaseAccessError | undefined;
  while (!stopping) {
    const r = await readiness();
    if (r.ready) break;
    // A password, a grant, a database's name: waiting changes nothing, so start-up fails naming it.
    if (r.refused) {
      refused = r.refused;
      break;
    }
    if (!warned) log.warn({ reason: r.reason }, 'waiting before starting to claim jobs');
    warned = true;
    await new Promise((resolve) => setTimeout(resolve, READY_RETRY_MS));
  }
  // Without a server, the probe's only use was this wait: its connection is not kept.
  await probe?.close();
  if (refused) {
    await stop('start-up failed');
    throw refused;
  }
  if (!stopping) await supervisor.start();
  // A stop during supervisor.start() waited for it and drained: nothing is ready then.
  if (!stopping)
    log.info(
      {
        database: safeUrl(setup.databaseUrl),
        metricsPort: served?.port,
        queues: settings.queues,
        threads: settings.pool.maxThreads,
        // At most, per pool (README "Connection budget"); LISTEN goes to database.directUrl when set.
        connections: connectionBudget(settings),
        listen: settings.database.directUrl ? 'database.directUrl' : 'database.url',
        version: VERSION,
      },
      'ready',
    );
  return { id: supervisor.id, events: supervisor.events, metricsPort: served?.port, stopped, stop };
}

/**
 * The kinds this supervisor runs, said in one line at start: the app's (its map
 * and tasks.dir) and the built-in tasks enabled. A job of any other kind fails
 * with TaskLoadError.
 */
function servedKinds(setup: RunnerSetup, checked: string[]): void {
  const kinds = [...new Set([...checked, ...setup.settings.tasks.builtins])].sort();
  if (kinds.length > 0) setup.log.info({ kinds }, 'serving task kinds');
  else
    setup.log.warn(
      { kinds },
      'serving no task kinds: every job fails with TaskLoadError (give run({ tasks }), tasks.dir or tasks.builtins)',
    );
}

async function serve(setup: RunnerSetup, supervisor: Supervisor) {
  const metrics = createMetrics();
  metrics.info.labels(supervisor.id, VERSION).set(1);
  const options = {
    settings: setup.settings,
    supervisor,
    databaseUrl: setup.databaseUrl,
    metrics,
    log: setup.log,
    kinds: Object.keys(setup.taskFiles),
  };
  if (!setup.exportMetrics) return serveSupervisor(options);
  const observed = observeSupervisor(options);
  setup.exportMetrics(observed);
  return { port: undefined, readiness: observed.readiness, probe: observed.probe, close: () => observed.close() };
}
