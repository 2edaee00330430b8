/**
 * Signals: the first SIGTERM or SIGINT drains the supervisor and exits 0; a
 * second one forces an exit at once (status 1). Node installs no default
 * handler once these are registered, which is also what makes the process
 * behave as PID 1 in a container (where the kernel ignores unhandled SIGTERM).
 */
import type { Logger } from '../log.ts';

export function drainOnSignals(options: {
  stop: (reason: string) => Promise<void>;
  log: Logger;
  exit?: (code: number) => void;
}): () => void {
  const exit = options.exit ?? ((code: number) => process.exit(code));
  let draining = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (draining) {
      options.log.warn({ signal }, 'second signal: exiting without finishing the drain');
      exit(1);
      return;
    }
    draining = true;
    options.log.info({ signal }, 'draining');
    options.stop(signal).then(
      () => exit(0),
      (err: unknown) => {
        options.log.error({ err }, 'drain failed');
        exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return () => {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  };
}
