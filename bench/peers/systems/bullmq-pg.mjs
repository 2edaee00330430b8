// BullMQ 6 on its PostgreSQL backend: the ordinary Queue / Worker classes with the
// `createPostgresBackend` factory as their last constructor argument and a
// node-postgres pool config (plus BullMQ's `schema`) as `connection`. Claims use
// FOR UPDATE SKIP LOCKED, completion and the next claim share one transaction, idle
// workers block on LISTEN/NOTIFY. The schema is created explicitly with
// runMigrations (connections do not migrate by themselves). Bulk enqueue is
// Queue.addBulk, one add_jobs_bulk() call per chunk (chunks measured faster than one
// call with all 20,000, see README). The pool is node-postgres' default 10, which
// measured faster than 20 or 50 at concurrency 50.
import pg from 'pg';
import { Queue, Worker, createPostgresBackend, runMigrations } from 'bullmq';
import { packageVersions } from '../lib/versions.mjs';
import { describeChunks, inChunks } from '../lib/chunks.mjs';
import { applyTune } from './tune.mjs';

const SCHEMA = 'peer_bullmq';
const QUEUE = 'noop';

const DEFAULTS = { max: 10, removeOnComplete: false, addBulkChunk: 1000, addBulkParallel: 2 };

export function create({ databaseUrl, concurrency, tune }) {
  const tuned = applyTune('bullmq-pg', DEFAULTS, tune);
  const poolMax = tuned.max;
  const connection = { connectionString: databaseUrl, schema: SCHEMA, max: poolMax };
  const workerOptions = { concurrency, ...(tuned.removeOnComplete ? { removeOnComplete: true } : {}) };
  let queue = null;

  return {
    schemas: [SCHEMA],
    config: {
      backend: 'createPostgresBackend',
      connection: { schema: SCHEMA, max: poolMax },
      worker: workerOptions,
      enqueueMany: describeChunks('Queue.addBulk', tuned.addBulkChunk, tuned.addBulkParallel),
      enqueueOne: 'Queue.add',
    },
    versions: packageVersions(['bullmq', 'pg']),

    async install(admin) {
      await admin.dropSchema(SCHEMA);
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      try {
        await runMigrations(client, SCHEMA);
      } finally {
        await client.end();
      }
    },

    async openProducer() {
      queue = new Queue(QUEUE, { connection }, createPostgresBackend);
      queue.on('error', (err) => process.stderr.write(`bullmq queue error: ${err.message}\n`));
      await queue.waitUntilReady();
    },

    async enqueueMany(n, { oneCall = false } = {}) {
      const jobs = Array.from({ length: n }, () => ({ name: QUEUE, data: {} }));
      await inChunks(jobs, oneCall ? 0 : tuned.addBulkChunk, tuned.addBulkParallel, (chunk) => queue.addBulk(chunk));
    },

    async enqueueOne(payload) {
      await queue.add(QUEUE, payload);
    },

    async closeProducer() {
      await queue?.close();
      queue = null;
    },

    async countJobs(admin) {
      return admin.count(`SELECT count(*) FROM ${SCHEMA}.job WHERE queue = $1`, [QUEUE]);
    },

    // With removeOnComplete a finished job is deleted: done = enqueued − still present.
    async countDone(admin, enqueued) {
      if (tuned.removeOnComplete) return enqueued - (await this.countJobs(admin));
      return admin.count(`SELECT count(*) FROM ${SCHEMA}.job WHERE queue = $1 AND state = 'completed'`, [QUEUE]);
    },

    async startWorker({ onJob, onError }) {
      let stopping = false;
      const worker = new Worker(
        QUEUE,
        async (job) => onJob(job.data),
        { connection, ...workerOptions },
        createPostgresBackend,
      );
      worker.on('error', (err) => {
        if (!stopping) onError(err);
      });
      await worker.waitUntilReady();
      return {
        async stop() {
          stopping = true;
          await worker.close();
        },
      };
    },
  };
}
