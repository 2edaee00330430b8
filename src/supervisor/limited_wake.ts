/**
 * A limited queue's slot is free only once the job's outcome is written: the
 * dispatcher's "capacity freed" comes before that, when a claim would still
 * count the job as running (measured: globalConcurrency 50 on one supervisor
 * ran 252 jobs/s, claiming only on its 200 ms retry). So limited queues also
 * claim after each written batch of outcomes. Unlimited queues add no listener.
 */
import { isLimited, type QueueSettings } from '../config/sections.ts';
import type { SupervisorEvents } from './events.ts';

export function wakeLimitedOnOutcomes(
  events: SupervisorEvents,
  queues: Record<string, QueueSettings>,
  onFreed: (queue: string) => void,
): void {
  const limited = new Set(
    Object.entries(queues)
      .filter(([, q]) => isLimited(q))
      .map(([name]) => name),
  );
  if (limited.size === 0) return;
  const freed = ({ jobs }: { jobs: ReadonlyArray<{ queue: string }> }) => {
    for (const queue of new Set(jobs.map((j) => j.queue))) if (limited.has(queue)) onFreed(queue);
  };
  for (const event of ['job:completed', 'job:retried', 'job:dead', 'job:released'] as const) events.on(event, freed);
}
