/**
 * Feeds supervisor events into the metrics. Labelled children are cached per
 * (queue, kind) so a batch of completions costs a map lookup per job, not a
 * label hash per metric.
 */
import type { SupervisorEvents } from '../supervisor/events.ts';
import { UNBOUNDED_LABELS, type LabelSet } from './labels.ts';
import type { Metrics } from './metrics.ts';

/**
 * Each gauge has one writer: pool queue length, draining, paused queues and the read-only server are written here;
 * threads, busy threads, jobs in flight and failing loops at scrape time.
 */
export function observeEvents(events: SupervisorEvents, metrics: Metrics, labels: LabelSet = UNBOUNDED_LABELS): void {
  const cache = new Map<string, unknown>();
  const child = <C>(metric: { labels(...v: string[]): C }, name: string, rawQueue: string, rawKind: string): C => {
    const queue = labels.queue(rawQueue);
    const kind = labels.kind(rawKind);
    const key = `${name}\u0000${queue}\u0000${kind}`;
    let c = cache.get(key) as C | undefined;
    if (!c) {
      c = metric.labels(queue, kind);
      cache.set(key, c);
    }
    return c;
  };
  const countBy = (
    jobs: Array<{ queue: string; kind: string }>,
    metric: { labels(...v: string[]): { inc(): void } },
    name: string,
  ) => {
    for (const j of jobs) child(metric, name, j.queue, j.kind).inc();
  };

  events.on('job:started', ({ jobs, waitMs }) => {
    jobs.forEach((j, i) =>
      child(metrics.waitSeconds, 'wait', j.queue, j.kind).observe(Math.max(0, (waitMs[i] ?? 0) / 1000)),
    );
  });
  const finished =
    (counter: { labels(...v: string[]): { inc(): void } }, name: string) =>
    ({ jobs, runMs }: { jobs: Array<{ queue: string; kind: string }>; runMs: number[] }) => {
      jobs.forEach((j, i) => {
        child(counter, name, j.queue, j.kind).inc();
        child(metrics.runSeconds, 'run', j.queue, j.kind).observe((runMs[i] ?? 0) / 1000);
      });
    };
  events.on('batch:called', ({ queue, kind, size, fillMs }) => {
    child(metrics.batchCalls, 'batch', queue, kind).inc();
    child(metrics.batchSize, 'batchSize', queue, kind).observe(size);
    child(metrics.batchFillSeconds, 'batchFill', queue, kind).observe(Math.max(0, fillMs / 1000));
  });
  events.on('job:completed', finished(metrics.completed, 'completed'));
  events.on('job:retried', finished(metrics.retried, 'retried'));
  events.on('job:dead', finished(metrics.deadLettered, 'dead'));
  events.on('job:snoozed', finished(metrics.snoozed, 'snoozed'));
  events.on('job:slept', ({ jobs }) => countBy(jobs, metrics.slept, 'slept'));
  events.on('job:waiting', ({ jobs }) => countBy(jobs, metrics.waited, 'waited'));
  events.on('job:steps', ({ job, report }) => {
    if (report.steps > 0) child(metrics.stepsRecorded, 'steps', job.queue, job.kind).inc(report.steps);
    if (report.lateMs !== undefined)
      child(metrics.wakeLateSeconds, 'late', job.queue, job.kind).observe(report.lateMs / 1000);
    const queue = labels.queue(job.queue);
    const kind = labels.kind(job.kind);
    if (report.waits?.signal) metrics.waitsResolved.labels(queue, kind, 'signal').inc(report.waits.signal);
    if (report.waits?.timeout) metrics.waitsResolved.labels(queue, kind, 'timeout').inc(report.waits.timeout);
  });
  events.on('lease:reaped', ({ jobs }) => countBy(jobs, metrics.reaped, 'reaped'));
  events.on('lease:lost', ({ jobs }) => countBy(jobs, metrics.leasesLost, 'lost'));
  events.on('jobs:cleaned', ({ rows }) => {
    for (const r of rows) metrics.cleaned.labels(labels.queue(r.queue), labels.kind(r.kind), r.status).inc(r.count);
  });
  events.on('pool:changed', ({ queued }) => metrics.poolQueueLength.set(queued));
  events.on('schedule:fired', (e) => {
    if (!e.duplicate) child(metrics.scheduleFires, 'fired', e.queue, e.kind).inc();
  });
  events.on('supervisor:draining', () => metrics.draining.set(1));
  events.on('queue:paused', ({ queue }) => metrics.queuePaused.labels(labels.queue(queue)).set(1));
  events.on('queue:resumed', ({ queue }) => metrics.queuePaused.labels(labels.queue(queue)).set(0));
  events.on('db:error', ({ loop }) => metrics.dbErrors.labels(loop).inc());
  events.on('database:read-only', () => metrics.readOnlyServer.set(1));
  events.on('database:writable', ({ unwritableMs, failover }) => {
    metrics.readOnlyServer.set(0);
    metrics.unwritableSeconds.inc(unwritableMs / 1000);
    if (failover) metrics.failovers.inc();
  });
}
