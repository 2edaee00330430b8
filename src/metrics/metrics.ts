/**
 * Every metric jobvisor exports, defined in one place on a registry that is not
 * global: each supervisor (and each test) gets a fresh one and can list the names.
 *
 * Database gauges (`jobvisor_jobs`, `jobvisor_oldest_pending_seconds`) are global
 * facts that every replica reports: aggregate them with `max`, never `sum`.
 * Counters and histograms are per process: aggregate them with `sum`.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type Aggregator } from 'prom-client';
import { droppedLogLines } from '../log.ts';

const JOB_LABELS = ['queue', 'kind'] as const;
/** Seconds: from 1 ms to about 17 minutes. */
const DURATION_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200,
];

/** Jobs per batch call: from 1 to the largest maxSize (10,000). */
const BATCH_SIZE_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000];

export function createMetrics(options: { defaultMetrics?: boolean } = {}) {
  const registry = new Registry();
  if (options.defaultMetrics !== false) {
    // Unprefixed (process_*, nodejs_*), as every Node.js exporter names them: the stock
    // Node.js dashboards and alerts match them as they are. `job`/`instance` tell the
    // processes apart; the `jobvisor_` prefix is for jobvisor's own metrics.
    collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 1 });
  }
  const registers = [registry];
  const counter = (name: string, help: string, labelNames: readonly string[] = JOB_LABELS) =>
    new Counter({ name, help, labelNames, registers });
  // `aggregator`: how the cluster primary merges the children's values (default sum).
  const gauge = (name: string, help: string, labelNames: readonly string[] = [], aggregator?: Aggregator) =>
    new Gauge({ name, help, labelNames, registers, ...(aggregator ? { aggregator } : {}) });
  const histogram = (name: string, help: string, buckets = DURATION_BUCKETS) =>
    new Histogram({ name, help, labelNames: JOB_LABELS, buckets, registers });

  return {
    registry,
    scheduleFires: counter(
      'jobvisor_schedule_fires_total',
      "Schedule fire times this supervisor's scheduler enqueued a job for (not duplicates).",
    ),
    completed: counter('jobvisor_jobs_completed_total', 'Jobs that finished successfully in this supervisor.'),
    retried: counter('jobvisor_jobs_retried_total', 'Failed attempts scheduled for a retry by this supervisor.'),
    snoozed: counter('jobvisor_jobs_snoozed_total', 'Runs that snoozed (put their job back without using an attempt).'),
    stepsRecorded: counter(
      'jobvisor_steps_recorded_total',
      'Durable steps (ctx.step) recorded by runs in this supervisor.',
    ),
    slept: counter('jobvisor_jobs_slept_total', 'Runs that ended in ctx.sleep (their job due again at its wake time).'),
    waited: counter('jobvisor_jobs_waited_total', 'Runs that ended in ctx.waitFor (their job parked as waiting).'),
    waitsResolved: counter(
      'jobvisor_waits_resolved_total',
      'Waits (ctx.waitFor) resolved in this supervisor, by how: `signal` (a signal delivered) or `timeout`.',
      ['queue', 'kind', 'by'],
    ),
    wakeLateSeconds: histogram(
      'jobvisor_wake_lateness_seconds',
      "Time from a sleep's wake time (or a timed-out wait's deadline) to the run that resumed from it.",
    ),
    deadLettered: counter(
      'jobvisor_jobs_dead_lettered_total',
      'Jobs moved to status failed (dead letter) by this supervisor.',
    ),
    reaped: counter(
      'jobvisor_jobs_reaped_total',
      "Expired leases returned to pending (or failed) by this supervisor's reaper.",
    ),
    cleaned: counter('jobvisor_jobs_cleaned_total', "Old finished jobs deleted by this supervisor's cleanup.", [
      'queue',
      'kind',
      'status',
    ]),
    leasesLost: counter(
      'jobvisor_leases_lost_total',
      'Jobs whose lease this supervisor lost while running them (aborted; their writes are fenced).',
    ),
    runSeconds: histogram('jobvisor_job_run_seconds', 'Time a job ran in its worker thread.'),
    waitSeconds: histogram('jobvisor_job_wait_seconds', 'Time from a job being due (run_at) to its start.'),
    batchCalls: counter(
      'jobvisor_batch_calls_total',
      'Calls of batch tasks started by this supervisor (each runs many jobs).',
    ),
    batchSize: histogram('jobvisor_batch_size', 'Jobs per call of a batch task.', BATCH_SIZE_BUCKETS),
    batchFillSeconds: histogram(
      'jobvisor_batch_fill_wait_seconds',
      "Time a batch call's first job gathered (from its claim to the call's start): up to the task's batch.maxWait.",
    ),
    jobs: gauge(
      'jobvisor_jobs',
      'Jobs in the database by queue, kind and status (global; aggregate with max). Counts pending, running, failed, blocked and waiting.',
      ['queue', 'kind', 'status'],
      'max',
    ),
    oldestPending: gauge(
      'jobvisor_oldest_pending_seconds',
      'Age of the oldest due pending job per queue (global; aggregate with max).',
      ['queue'],
      'max',
    ),
    inFlight: gauge('jobvisor_jobs_in_flight', 'Jobs claimed by this supervisor and not yet recorded, per queue.', [
      'queue',
    ]),
    // Set at scrape time only (a thread that idles out changes no event).
    threads: gauge('jobvisor_pool_threads', 'Worker threads alive in the pool.'),
    threadsBusy: gauge('jobvisor_pool_threads_busy', 'Worker threads running at least one job.'),
    threadsStuck: gauge(
      'jobvisor_threads_stuck',
      'Worker threads terminated over 5 s ago that have not died (blocked in a synchronous call).',
    ),
    poolQueueLength: gauge('jobvisor_pool_queue_length', 'Batches waiting in the pool for a free thread.'),
    queuePaused: gauge(
      'jobvisor_queue_paused',
      '1 while the queue is paused (jobvisor queues pause), as this supervisor last read it; 0 otherwise.',
      ['queue'],
      'max',
    ),
    draining: gauge('jobvisor_supervisor_draining', '1 while this supervisor is shutting down.'),
    info: gauge('jobvisor_supervisor_info', 'Always 1; labels identify the supervisor.', ['supervisor', 'version']),
    databaseGaugesUp: gauge(
      'jobvisor_database_gauges_up',
      '1 when the last read of the database gauges succeeded within the scrape deadline; 0: jobvisor_jobs and jobvisor_oldest_pending_seconds are stale.',
      [],
      'min',
    ),
    loopFailing: gauge(
      'jobvisor_loop_failing_seconds',
      'How long a supervisor loop has been failing, once longer than a lease (0 or absent: healthy).',
      ['loop'],
    ),
    failovers: counter(
      'jobvisor_database_failovers_total',
      'Failovers this supervisor went through: it reached a writable primary again after finding a read-only server, or found the primary at another address.',
      [],
    ),
    unwritableSeconds: counter(
      'jobvisor_database_unwritable_seconds_total',
      'Time this supervisor spent without a writable primary (unreachable or read-only), counted when a primary is reached again.',
      [],
    ),
    readOnlyServer: gauge(
      'jobvisor_database_read_only',
      '1 while the server reached is read-only (in recovery: a standby or a demoted primary); 0 otherwise.',
      [],
      'max',
    ),
    dbErrors: counter('jobvisor_database_errors_total', 'Database errors seen by supervisor loops.', ['loop']),
    // Read at scrape time from the log destination (log.ts), which cannot wait for the reader.
    logLinesDropped: new Counter({
      name: 'jobvisor_log_lines_dropped_total',
      help: "Log lines of this process's main thread dropped because stdout did not take them (a stalled reader).",
      registers,
      collect() {
        this.reset();
        this.inc(droppedLogLines());
      },
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

/**
 * The cluster primary's own metrics (`jobvisor start --processes N`), merged
 * into the children's on its /metrics. `child` is the slot (0 … N-1), so the
 * series stay bounded however often a slot's process is replaced.
 */
export function createClusterMetrics() {
  const registry = new Registry();
  const registers = [registry];
  return {
    registry,
    restarts: new Counter({
      name: 'jobvisor_cluster_restarts_total',
      help: 'Supervisor processes the cluster primary restarted after an unexpected exit, per slot.',
      labelNames: ['child'],
      registers,
    }),
    hung: new Counter({
      name: 'jobvisor_cluster_hung_total',
      help: 'Supervisor processes the cluster primary killed because their event loop stopped answering, per slot.',
      labelNames: ['child'],
      registers,
    }),
    recycles: new Counter({
      name: 'jobvisor_cluster_recycles_total',
      help: 'Supervisor processes replaced and drained for reaching cluster.maxJobs or cluster.maxRssMb, per slot.',
      labelNames: ['child', 'reason'],
      registers,
    }),
    handedBack: new Counter({
      name: 'jobvisor_cluster_jobs_handed_back_total',
      help: 'Running jobs of exited supervisor processes the primary put back at once (not through the lease).',
      registers,
    }),
    children: new Gauge({
      name: 'jobvisor_cluster_children',
      help: 'Supervisor processes alive under this primary.',
      registers,
    }),
    childrenReady: new Gauge({
      name: 'jobvisor_cluster_children_ready',
      help: 'Supervisor processes under this primary that answered ready at the last scrape.',
      registers,
    }),
  };
}

