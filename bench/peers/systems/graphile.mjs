// Graphile Worker in two configurations:
//   fast    — localQueue (batch fetch, jobs served from memory) plus batched
//             completions and failures (completeJobBatchDelay / failJobBatchDelay 0);
//   default — neither: every worker fetches and completes its own job.
// Both run concurrentJobs = C with a pool of C + 2, as Graphile's docs recommend.
// Bulk enqueue is WorkerUtils.addJobs (one add_jobs() call per chunk; chunks of 1000
// measured faster than one call with all 20,000, see README). Keyed jobs (perkey) get
// one named queue per key (`queueName`): Graphile runs a named queue's jobs one at a time.
import { Logger, makeWorkerUtils, run } from 'graphile-worker';
import { packageVersions } from '../lib/versions.mjs';
import { describeChunks, inChunks } from '../lib/chunks.mjs';
import { applyTune } from './tune.mjs';

const TASK = 'noop';

// maxPoolSize 0 means C + 2.
const ENQUEUE = { addJobsChunk: 1000, addJobsParallel: 1 };
const VARIANTS = {
  fast: { localQueueSize: 2000, completeJobBatchDelay: 0, failJobBatchDelay: 0, maxPoolSize: 0, ...ENQUEUE },
  default: { maxPoolSize: 0, ...ENQUEUE },
};

// Graphile logs through this; only errors and warnings reach stderr (stdout is the result).
const logger = new Logger((scope) => (level, message) => {
  if (level === 'error' || level === 'warning') process.stderr.write(`graphile ${level}: ${message}\n`);
});

export function create({ system, databaseUrl, concurrency, tune }) {
  const variant = system === 'graphile-fast' ? 'fast' : 'default';
  const tuned = applyTune(system, VARIANTS[variant], tune);
  const schema = `peer_graphile_${variant}`;
  const maxPoolSize = tuned.maxPoolSize || concurrency + 2;
  const worker = {
    schema,
    concurrentJobs: concurrency,
    maxPoolSize,
    ...(variant === 'fast'
      ? {
          localQueue: { size: tuned.localQueueSize },
          completeJobBatchDelay: tuned.completeJobBatchDelay,
          failJobBatchDelay: tuned.failJobBatchDelay,
        }
      : {}),
  };
  let utils = null;

  const openUtils = () => makeWorkerUtils({ connectionString: databaseUrl, schema, logger });

  return {
    schemas: [schema],
    config: {
      preset: { worker },
      enqueueMany: describeChunks('WorkerUtils.addJobs', tuned.addJobsChunk, tuned.addJobsParallel),
      enqueueOne: 'WorkerUtils.addJob',
    },
    versions: packageVersions(['graphile-worker', 'pg']),

    async install(admin) {
      await admin.dropSchema(schema);
      const migrator = await openUtils();
      try {
        await migrator.migrate();
      } finally {
        await migrator.release();
      }
    },

    async openProducer() {
      utils = await openUtils();
    },

    async enqueueMany(n, { oneCall = false } = {}) {
      const specs = Array.from({ length: n }, () => ({ identifier: TASK, payload: {} }));
      await inChunks(specs, oneCall ? 0 : tuned.addJobsChunk, tuned.addJobsParallel, (chunk) => utils.addJobs(chunk));
    },

    // perkey: job i goes to named queue k<i mod keys> (`queueName`: its jobs run one at a time).
    async enqueueKeyed(n, keys, { oneCall = false } = {}) {
      const specs = Array.from({ length: n }, (_, i) => {
        const k = `k${i % keys}`;
        return { identifier: TASK, payload: { k }, queueName: k };
      });
      await inChunks(specs, oneCall ? 0 : tuned.addJobsChunk, tuned.addJobsParallel, (chunk) => utils.addJobs(chunk));
    },

    async enqueueOne(payload) {
      await utils.addJob(TASK, payload);
    },

    async closeProducer() {
      await utils?.release();
      utils = null;
    },

    async countJobs(admin) {
      return admin.count(`SELECT count(*) FROM "${schema}"._private_jobs`);
    },

    // Graphile deletes a job when it completes, so done = enqueued − still present.
    async countDone(admin, enqueued) {
      return enqueued - (await admin.count(`SELECT count(*) FROM "${schema}"._private_jobs`));
    },

    async startWorker({ onJob, onError }) {
      const runner = await run({
        connectionString: databaseUrl,
        noHandleSignals: true,
        logger,
        parsedCronItems: [],
        taskList: { [TASK]: async (payload) => onJob(payload) },
        preset: { worker },
      });
      let stopping = false;
      runner.promise.catch((err) => {
        if (!stopping) onError(err);
      });
      return {
        async stop() {
          stopping = true;
          await runner.stop();
          await runner.promise.catch(() => {});
        },
      };
    },
  };
}
