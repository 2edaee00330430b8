/**
 * What the supervisor's parts tell each other to drive behaviour, called
 * directly. `supervisor.events` (`runner.events`) is for observers: metrics,
 * logs, traces and users' listeners. Nothing that decides listens to it, so
 * removing every listener changes no behaviour, and a new outcome cannot be
 * forgotten in a listener's list of event names (build_hooks.ts says what
 * each hook does).
 */
import type { JobRef } from '../queue/types.ts';
import type { SupervisorEvents } from './events.ts';
import { safeEmit } from './safe_emit.ts';

export interface Hooks {
  /**
   * This job's outcome is written, or refused through the fence: the completer
   * no longer holds its claim (a limited queue's slot is free). Per job; cheap.
   */
  outcomeSettled(job: { readonly queue: string }): void;
  /** Runs whose claim was lost have ended here: dropped by the dispatcher, or their outcome fenced off. */
  lostRunsEnded(jobs: readonly JobRef[]): void;
  /** A round of `loop` failed on the database (is the primary still reached?). */
  dbFailed(loop: string, err: unknown): void;
  /** LISTEN was refused because the server reached is in recovery (a standby). */
  listenerReadOnly(error: string): void;
  /** A writable primary is reached again after it was not. */
  writable(): void;
  /** A fetcher claimed jobs of `queue`. */
  claimed(queue: string): void;
}

/** Hooks that do nothing: a part built alone (a test's completer, dispatcher or fetcher). */
export const NO_HOOKS: Hooks = {
  outcomeSettled: () => {},
  lostRunsEnded: () => {},
  dbFailed: () => {},
  listenerReadOnly: () => {},
  writable: () => {},
  claimed: () => {},
};

/** A failed database round of `loop`: to the hooks, then to observers as 'db:error'. */
export function reportDbError(hooks: Hooks, events: SupervisorEvents, loop: string, err: unknown): void {
  hooks.dbFailed(loop, err);
  safeEmit(events, 'db:error', { loop, err });
}
