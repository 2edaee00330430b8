/**
 * Queue defaults by task kind, for `enqueue` calls that name no queue.
 *
 * Filled in this process by whoever has read the tasks' `options` exports: a
 * supervisor does at start (for queues it serves), `jobvisor enqueue` for the
 * kind it enqueues, and an application may call setTaskQueueDefault() itself.
 * Enqueueing never imports task modules: that would load a task's heavy
 * dependencies (sharp, a PDF library) into every process that enqueues. A kind
 * with no entry goes to `default`; if its task is exclusive it still gets a
 * thread of its own there (the dispatcher reads the options too).
 */
import { checkName, checkQueue } from '../names.ts';

const queues = new Map<string, string>();

/** Jobs of `kind` enqueued without a queue go to `queue` (undefined: back to `default`). */
export function setTaskQueueDefault(kind: string, queue: string | undefined): void {
  checkName('kind', kind);
  if (queue === undefined) {
    queues.delete(kind);
    return;
  }
  checkQueue('queue', queue);
  queues.set(kind, queue);
}

/** The queue for a job of `kind` whose caller named none. */
export function defaultQueueOf(kind: string): string {
  return queues.get(kind) ?? 'default';
}
