/**
 * Emitting after a write, where a throwing listener must not undo anything.
 *
 * EventEmitter runs listeners synchronously and rethrows their errors to the
 * emitter. After a write has committed, such an error used to look like a
 * failed write, so the outcome was queued and written again. safeEmit
 * reports a listener's error as a process warning (code
 * JOBVISOR_LISTENER_FAILED) and returns normally.
 */
import { messageOf } from '../errors.ts';
import type { Events, SupervisorEvents } from './events.ts';

export function safeEmit<K extends keyof Events>(events: SupervisorEvents, name: K, ...args: Events[K]): void {
  try {
    // The typed emitter's overloads do not accept a generic key with its tuple.
    (events.emit as (n: K, ...a: Events[K]) => boolean)(name, ...args);
  } catch (err) {
    try {
      process.emitWarning(`a listener of ${String(name)} threw: ${messageOf(err)}`, {
        code: 'JOBVISOR_LISTENER_FAILED',
      });
    } catch {
      // A value whose message cannot even be read: nothing more to report.
    }
  }
}
