/**
 * Supervisor-side spans, from the typed events: one per claim batch and one
 * per batch of outcomes written, each saying how many jobs it carried. They
 * are roots of their own (a batch mixes jobs of many traces); the jobs' own
 * traces hold the run spans (worker/tracing.ts). Subscribed only when the SDK
 * is on, so an untraced supervisor has no listener at all.
 */
import type { Attributes } from '@opentelemetry/api';
import { otelApi } from '../tracing/api.ts';
import type { JobRef, SupervisorEvents } from '../supervisor/events.ts';

/** A span of no duration, a root of its own, of kind CLIENT (a call to the database). */
function instant(name: string, attributes: Attributes): void {
  const { ROOT_CONTEXT, SpanKind, trace } = otelApi();
  trace.getTracer('jobvisor').startSpan(name, { kind: SpanKind.CLIENT, attributes }, ROOT_CONTEXT).end();
}

/** The queue all jobs share, or undefined for a mixed batch. */
function queueOf(jobs: JobRef[]): string | undefined {
  const queue = jobs[0]?.queue;
  return jobs.every((j) => j.queue === queue) ? queue : undefined;
}

export function traceEvents(events: SupervisorEvents, supervisor: string): () => void {
  const onClaimed = ({ queue, count }: { queue: string; count: number }) =>
    instant(`jobvisor.claim ${queue}`, {
      'messaging.system': 'jobvisor',
      'messaging.operation.type': 'receive',
      'messaging.operation.name': 'claim',
      'messaging.destination.name': queue,
      'messaging.batch.message_count': count,
      'jobvisor.supervisor': supervisor,
    });
  const outcome =
    (name: string) =>
    ({ jobs }: { jobs: JobRef[] }) => {
      const queue = queueOf(jobs);
      instant('jobvisor.complete', {
        'messaging.system': 'jobvisor',
        'messaging.operation.type': 'settle',
        'messaging.operation.name': 'complete',
        ...(queue === undefined ? {} : { 'messaging.destination.name': queue }),
        'messaging.batch.message_count': jobs.length,
        'jobvisor.outcome': name,
        'jobvisor.supervisor': supervisor,
      });
    };
  const handlers = {
    'job:completed': outcome('done'),
    'job:retried': outcome('retried'),
    'job:dead': outcome('dead'),
    'job:fenced': outcome('fenced'),
  } as const;
  events.on('job:claimed', onClaimed);
  for (const [event, handler] of Object.entries(handlers)) events.on(event as 'job:completed', handler);
  return () => {
    events.off('job:claimed', onClaimed);
    for (const [event, handler] of Object.entries(handlers)) events.off(event as 'job:completed', handler);
  };
}
