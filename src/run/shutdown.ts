/**
 * Signals: the first SIGTERM or SIGINT drains the supervisor and exits 0; a
 * second one exits without finishing the drain (status 1). Node installs no default
 * handler once these are registered, which is also what makes the process
 * behave as PID 1 in a container (where the kernel ignores unhandled SIGTERM).
 *
 * The process exits within `graceMs + marginMs` of the first signal, whatever
 * its worker threads do. A thread blocked in a synchronous call survives its
 * termination, and `process.exit()` would wait for it (thread_watch.ts); then
 * the exit is hard (hard_exit.ts): the drain's outcomes are written first when
 * the drain finished, and otherwise the leases of the jobs left running expire
 * and other supervisors take them back.
 */
import type { Logger } from '../log.ts';
import { exitHard as defaultExitHard, killChildProcesses } from './hard_exit.ts';

/** Drain overhead beyond the grace: aborting jobs (2 s), flushing outcomes (5 s), waiting for threads (2 s). */
export const SHUTDOWN_MARGIN_MS = 10_000;
const THREAD_WAIT_MS = 1000;

interface DrainOptions {
  stop: (reason: string) => Promise<void>;
  log: Logger;
  exit?: (code: number) => void;
  /** shutdown.grace: with it, a watchdog ends the process at graceMs + marginMs. */
  graceMs?: number;
  marginMs?: number;
  /** Ends the worker threads, waiting up to `ms`; resolves with how many live on. */
  threadsAlive?: (ms: number) => Promise<number>;
  exitHard?: () => void;
  killChildren?: () => number[];
}

export function drainOnSignals(options: DrainOptions): () => void {
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const exitHard = options.exitHard ?? defaultExitHard;
  const { log } = options;
  let draining = false;
  let exiting = false;
  let watchdog: NodeJS.Timeout | undefined;

  /** exit(code) when every thread has died, else a hard exit. */
  const finish = async (code: number) => {
    if (exiting) return;
    exiting = true;
    clearTimeout(watchdog);
    const alive = options.threadsAlive ?? (() => Promise.resolve(0));
    let threads = await alive(THREAD_WAIT_MS);
    if (threads > 0) {
      const children = (options.killChildren ?? killChildProcesses)();
      log.warn({ threads, children }, 'worker threads did not stop: killed child processes they may wait on');
      threads = await alive(THREAD_WAIT_MS);
    }
    if (threads === 0) return exit(code);
    log.error({ threads }, 'worker threads blocked in a synchronous call did not stop: exiting hard');
    exitHard();
  };

  const onSignal = (signal: NodeJS.Signals) => {
    if (draining) {
      log.warn({ signal }, 'second signal: exiting without finishing the drain');
      void finish(1);
      return;
    }
    draining = true;
    log.info({ signal }, 'draining');
    if (options.graceMs !== undefined) {
      const limitMs = options.graceMs + (options.marginMs ?? SHUTDOWN_MARGIN_MS);
      watchdog = setTimeout(() => {
        log.error({ limitMs }, 'drain overran shutdown.grace: exiting without finishing it');
        void finish(1);
      }, limitMs);
    }
    options.stop(signal).then(
      () => finish(0),
      (err: unknown) => {
        log.error({ err }, 'drain failed');
        return finish(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return () => {
    clearTimeout(watchdog);
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  };
}

export interface StartupSignals {
  /** Aborted by the first SIGTERM or SIGINT. */
  readonly signal: AbortSignal;
  /** The start-up is over: `stop` is the runner's, or undefined when it was given up. */
  settle(stop?: (reason: string) => Promise<void>): void;
  /** Takes the handlers off (a stop not caused by a signal, a failed start-up). */
  remove(): void;
}

/**
 * drainOnSignals() from the first moment of a start-up, before the runner's
 * stop() exists: a signal then aborts `signal` (the task checks and the
 * migrations end at once) and its drain waits for settle(): with the runner's
 * stop() once it exists, or with nothing when the start-up was given up. Then
 * the process exits 0 as after any drain, having closed what it opened (the
 * embedded server it started, too). Before, such a signal met Node's default
 * handler: exit 143 or 130 with the embedded server left running.
 */
export function drainFromStartup(options: Omit<DrainOptions, 'stop'>): StartupSignals {
  const cancel = new AbortController();
  let stop: ((reason: string) => Promise<void>) | undefined;
  let settle: () => void = () => {};
  const settled = new Promise<void>((resolve) => (settle = resolve));
  const remove = drainOnSignals({
    ...options,
    stop: async (signal) => {
      cancel.abort(signal);
      await settled;
      await stop?.(signal);
    },
  });
  return {
    signal: cancel.signal,
    settle(runnerStop) {
      stop = runnerStop;
      settle();
    },
    remove,
  };
}
