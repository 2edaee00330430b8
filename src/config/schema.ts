/**
 * The configuration schema: one tree that gives convict its checks and
 * defaults (the `Settings` type is derived from it in settings.ts) and the
 * duration keys (tagged `duration: true` here, turned into milliseconds on load).
 */
import { availableParallelism } from 'node:os';
import { clusterSchema } from './cluster.ts';
import { dashboardSchema } from './dashboard.ts';
import type { QueueInput, ScheduleInput } from './sections.ts';
import { tasksSchema } from './tasks.ts';
import { DEFAULT_MAX_PAYLOAD_BYTES } from './payload.ts';
import { BYTE_COUNT, durationFormat, intIn, timerFormat, validateSchedules } from './validate.ts';

export * from './sections.ts';

export const schema = {
  database: {
    url: {
      doc: 'PostgreSQL connection string. Empty: start the embedded PostgreSQL (development only).',
      format: String,
      default: '',
      env: 'DATABASE_URL',
      sensitive: true,
    },
    directUrl: {
      doc: 'A direct connection (no pooler in transaction mode) for LISTEN and migrations, when database.url goes through PgBouncer in transaction mode. Empty: database.url.',
      format: String,
      default: '',
      env: 'DATABASE_DIRECT_URL',
      sensitive: true,
    },
    poolSize: {
      doc: "Connections in the supervisor's pool (plus one for LISTEN).",
      format: intIn(1, 1000),
      default: 10,
      env: 'DATABASE_POOL_SIZE',
    },
    schema: {
      doc: 'Schema holding the jobs table.',
      format: (v: unknown) => {
        if (typeof v !== 'string' || !/^[a-z_][a-z0-9_]{0,62}$/.test(v))
          throw new Error('must be a lower-case SQL identifier');
      },
      default: 'jobvisor',
      env: 'JOBVISOR_SCHEMA',
    },
    embedded: {
      dir: {
        doc: 'Data folder of the embedded PostgreSQL.',
        format: String,
        default: '.jobvisor/postgres',
        env: 'JOBVISOR_EMBEDDED_DIR',
      },
      port: {
        doc: 'Port of the embedded PostgreSQL (loopback only).',
        format: 'port',
        default: 54329,
        env: 'JOBVISOR_EMBEDDED_PORT',
      },
    },
  },
  tasks: tasksSchema,
  pool: {
    maxThreads: {
      doc: 'Worker threads in the Piscina pool.',
      format: intIn(1, 256),
      default: availableParallelism(),
      env: 'JOBVISOR_MAX_THREADS',
    },
    idleTimeout: {
      doc: 'An idle thread above one is closed after this long.',
      format: timerFormat(0),
      duration: true as const,
      default: '60s',
    },
    maxOldGenerationSizeMb: {
      doc: "Heap limit per worker thread in MB (0: Node's default). A task above it fails its job with an out-of-memory error.",
      format: intIn(0, 65_536),
      default: 0,
    },
    maxYoungGenerationSizeMb: {
      doc: "Young-generation limit per worker thread in MB (0: Node's default).",
      format: intIn(0, 4096),
      default: 0,
    },
    stackSizeMb: { doc: "Stack size per worker thread in MB (0: Node's default).", format: intIn(0, 1024), default: 0 },
    dbPoolSize: {
      doc: 'Connections of the pool each worker thread offers tasks as ctx.db (opened lazily).',
      format: intIn(1, 100),
      default: 2,
    },
  },
  queues: {
    doc: 'Queues this supervisor serves: name → { concurrency, jobsPerThread, prefetch, timeout }. Layers merge by queue name.',
    format: Object,
    default: { default: {} } as Record<string, QueueInput>,
  },
  jobs: {
    lease: {
      doc: 'Lease of a running job, renewed by heartbeat every lease/3.',
      format: timerFormat(3000),
      duration: true as const,
      default: '15s',
    },
    timeout: {
      doc: 'A job running longer is aborted (its thread terminated) and retried.',
      format: durationFormat,
      duration: true as const,
      default: '5m',
    },
    maxAttempts: {
      doc: 'Attempts for jobs enqueued by the CLI and schedules when none is given.',
      format: intIn(1, 1000),
      default: 8,
    },
    maxPayloadBytes: {
      doc: 'Largest payload enqueue accepts, in bytes of JSON.',
      format: intIn(2, 100 * 1024 * 1024),
      default: DEFAULT_MAX_PAYLOAD_BYTES,
    },
    maxResultBytes: {
      doc: "Largest return value a task may leave in the job's result column, in bytes of JSON; a larger one fails the attempt.",
      format: BYTE_COUNT,
      default: 64 * 1024,
    },
    maxSnoozes: {
      doc: 'Snoozes (ctx.snooze, SnoozeError) a job may take; the next one dead-letters it.',
      format: intIn(0, 1_000_000),
      default: 100,
    },
    maxSteps: {
      doc: 'Steps, sleeps and waits (ctx.step, ctx.sleep, ctx.waitFor) one job may record; the next one dead-letters it.',
      format: intIn(1, 100_000),
      default: 1000,
    },
    maxStepResultBytes: {
      doc: 'Largest result a ctx.step may record, in bytes of JSON; a larger one dead-letters the job.',
      format: BYTE_COUNT,
      default: 64 * 1024,
    },
  },
  backoff: {
    base: {
      doc: 'Delay before the first retry; doubles each attempt.',
      format: durationFormat,
      duration: true as const,
      default: '1s',
    },
    max: { doc: 'Cap on the retry delay.', format: durationFormat, duration: true as const, default: '1h' },
    jitter: {
      doc: 'Fraction of the delay drawn at random (0: none, 1: full jitter).',
      format: (v: unknown) => {
        if (typeof v !== 'number' || v < 0 || v > 1) throw new Error('must be a number from 0 to 1');
      },
      default: 0.5,
    },
  },
  poll: {
    interval: {
      doc: 'Fallback poll when no notification arrives.',
      format: timerFormat(50),
      duration: true as const,
      default: '2s',
    },
  },
  completer: {
    flushInterval: {
      doc: 'Outcomes wait at most this long to be written in one batch.',
      format: timerFormat(0),
      duration: true as const,
      default: '2ms',
    },
    batchSize: { doc: 'Outcomes written per statement at most.', format: intIn(1, 10_000), default: 1000 },
  },
  reaper: {
    interval: {
      doc: 'How often expired leases are returned to pending.',
      format: timerFormat(100),
      duration: true as const,
      default: '5s',
    },
    batchSize: { doc: 'Expired leases handled per statement.', format: intIn(1, 100_000), default: 1000 },
  },
  cleanup: {
    interval: {
      doc: 'How often old finished jobs are deleted.',
      format: timerFormat(1000),
      duration: true as const,
      default: '1m',
    },
    retention: {
      doc: 'Done and cancelled jobs are kept this long after they finish. 0: a done job is deleted in its completion statement (a workflow parent stays until its children finish).',
      format: durationFormat,
      duration: true as const,
      default: '3d',
    },
    failedRetention: {
      doc: 'Failed jobs (dead letters) are kept this long.',
      format: durationFormat,
      duration: true as const,
      default: '30d',
    },
    // 5,000: a batch is an ordered walk of jobs_finished_idx (src/queue/cleanup.ts), so its
    // cost grows with its rows, while each statement's own cost (three round trips, the
    // commit's flush, planning) does not. A 500,000-row backlog with 1,000 per statement
    // took 17 s from the supervisor's start at cleanup.interval 2s; a batch of 5,000 holds
    // its row locks (on finished rows, which no claim reads) for about 10 ms.
    batchSize: { doc: 'Rows deleted per statement.', format: intIn(1, 100_000), default: 5000 },
  },
  scheduler: {
    interval: {
      doc: 'How often schedules are checked for due fire times.',
      format: timerFormat(100),
      duration: true as const,
      default: '1s',
    },
    catchUp: {
      doc: 'Fire times missed while no supervisor ran are enqueued if younger than this (never those before the schedule was first seen).',
      format: durationFormat,
      duration: true as const,
      default: '1h',
    },
  },
  schedules: {
    doc: 'Recurring jobs: list of { name, cron, kind, payload, queue, priority, timezone }.',
    format: validateSchedules,
    default: [] as ScheduleInput[],
  },
  shutdown: {
    grace: {
      doc: 'On SIGTERM running jobs may finish within this long; then they are aborted and handed back.',
      format: timerFormat(0),
      duration: true as const,
      default: '25s',
    },
  },
  metrics: {
    port: {
      doc: 'Port of /metrics, /healthz and /readyz (0: a free port).',
      format: 'port',
      default: 9464,
      env: 'METRICS_PORT',
    },
    host: { doc: 'Address the metrics server binds.', format: String, default: '0.0.0.0', env: 'METRICS_HOST' },
    refresh: {
      doc: 'Database gauges are re-read at most this often (the counts no sooner than 20 × their last read took).',
      format: durationFormat,
      duration: true as const,
      default: '5s',
    },
  },
  dashboard: dashboardSchema,
  cluster: clusterSchema,
  log: {
    level: {
      doc: 'pino level.',
      format: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
      default: 'info',
      env: 'LOG_LEVEL',
    },
  },
  supervisor: {
    name: {
      doc: 'Name of this supervisor in logs and locked_by (a process-unique suffix is always added).',
      format: String,
      default: '',
      env: 'JOBVISOR_SUPERVISOR_NAME',
    },
  },
  thumbnails: {
    dir: {
      doc: 'Default output folder of the thumbnail task.',
      format: String,
      default: '.jobvisor/thumbnails',
      env: 'JOBVISOR_THUMBNAILS_DIR',
    },
    format: { doc: 'Image format of thumbnails.', format: ['webp', 'jpeg', 'png', 'avif'], default: 'webp' },
    sourceRoots: {
      doc: 'Folders the thumbnail task may read sources from (comma-separated in the environment).',
      format: Array,
      default: ['.jobvisor/images'] as string[],
      env: 'JOBVISOR_THUMBNAILS_SOURCE_ROOTS',
    },
  },
  reports: {
    dir: {
      doc: 'Output folder of the daily_report task.',
      format: String,
      default: '.jobvisor/reports',
      env: 'JOBVISOR_REPORTS_DIR',
    },
  },
};
