/**
 * SIGINT and SIGTERM for a command that has something to undo before it exits
 * (the demo's supervisor, the embedded server it started): the first signal is
 * noted, and the command acts on it at its next step; a second one exits at
 * once, as Node's default would have done with the first.
 */
import { constants } from 'node:os';

/** A signal the command was stopped by, thrown from its next step (Signals.check()). */
export class Interrupted extends Error {
  constructor(readonly signal: NodeJS.Signals) {
    super(`interrupted by ${signal}`);
  }
}

/** The exit status of a process ended by `signal`: 128 + its number (130 for SIGINT, 143 for SIGTERM). */
export function exitCodeOf(signal: NodeJS.Signals): number {
  return 128 + constants.signals[signal];
}

export interface Signals {
  /** The first signal, once one came. */
  readonly received: NodeJS.Signals | undefined;
  /** Resolves with the first signal. */
  readonly wait: Promise<NodeJS.Signals>;
  /** Throws Interrupted once a signal came. */
  check(): void;
  /** Takes the handlers off. */
  dispose(): void;
}

export function watchSignals(): Signals {
  let received: NodeJS.Signals | undefined;
  let resolve: (s: NodeJS.Signals) => void = () => {};
  const wait = new Promise<NodeJS.Signals>((r) => (resolve = r));
  const on = (s: NodeJS.Signals) => {
    if (received) process.exit(exitCodeOf(s));
    received = s;
    resolve(s);
  };
  process.on('SIGINT', on);
  process.on('SIGTERM', on);
  return {
    get received() {
      return received;
    },
    wait,
    check() {
      if (received) throw new Interrupted(received);
    },
    dispose() {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
    },
  };
}
