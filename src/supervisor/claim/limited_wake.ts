/**
 * A limited queue's slot is free only once the job's outcome is written: the
 * dispatcher's "capacity freed" comes before that, when a claim would still
 * count the job as running (measured: globalConcurrency 50 on one supervisor
 * ran 252 jobs/s, claiming only on its 200 ms retry). So limited queues also
 * claim after each written batch of outcomes, whatever the outcome (done,
 * retried, dead, released, snoozed, slept, waiting, fenced off): the completer
 * calls the hook per settled job, and each limited queue is woken once per
 * turn. Unlimited queues cost a set lookup.
 */
import { isLimited, type QueueSettings } from '../../config/sections.ts';
import type { Hooks } from '../hooks.ts';

/** The `outcomeSettled` hook: wakes (onFreed) each limited queue whose outcomes were written this turn. */
export function limitedWake(
  queues: Record<string, QueueSettings>,
  onFreed: (queue: string) => void,
): Hooks['outcomeSettled'] {
  const limited = new Set(
    Object.entries(queues)
      .filter(([, q]) => isLimited(q))
      .map(([name]) => name),
  );
  const freed = new Set<string>();
  const wake = () => {
    const queues = [...freed];
    freed.clear();
    for (const queue of queues) onFreed(queue);
  };
  return ({ queue }) => {
    if (!limited.has(queue)) return;
    if (freed.size === 0) queueMicrotask(wake);
    freed.add(queue);
  };
}
