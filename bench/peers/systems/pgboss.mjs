// pg-boss 12. A worker fetches `batchSize` jobs per query and completes the whole
// batch in one statement; the shortest polling interval it allows (0.5 s) and
// `burstWhenBatchFull` (keep fetching while batches come back full) keep it busy, and
// LISTEN/NOTIFY (`useListenNotify` + queue `notify`) wakes an idle worker at once.
// pg-boss has no per-job concurrency: each batch's jobs run with at most C in flight,
// and `localConcurrency` fetch loops run side by side. Bulk enqueue is boss.insert()
// in chunks (measured faster than one call with all 20,000, see README). Keyed jobs
// (perkey) carry a `group` and the worker fetches with `groupConcurrency: 1`.
import { PgBoss } from 'pg-boss';
import { packageVersions } from '../lib/versions.mjs';
import { describeChunks, inChunks } from '../lib/chunks.mjs';
import { applyTune } from './tune.mjs';

const SCHEMA = 'peer_pgboss';
const QUEUE = 'noop';

const DEFAULTS = {
  batchSize: 500,
  localConcurrency: 2,
  pollingIntervalSeconds: 0.5,
  burstWhenBatchFull: true,
  useListenNotify: true,
  max: 10,
  insertChunk: 1000,
  insertParallel: 2,
};

export function create({ databaseUrl, concurrency, tune, scenario }) {
  // perkey: one fetch loop. With two, groupConcurrency 1 did not hold: two fetches in
  // flight at once each saw the other's group as idle and both claimed a job of it
  // (108 of 2,000 jobs started while their group had one running, 200 groups).
  const tuned = applyTune('pgboss', scenario === 'perkey' ? { ...DEFAULTS, localConcurrency: 1 } : DEFAULTS, tune);
  const constructorOptions = { schema: SCHEMA, useListenNotify: tuned.useListenNotify, max: tuned.max };
  const queueOptions = { notify: tuned.useListenNotify };
  const workOptions = {
    batchSize: tuned.batchSize,
    localConcurrency: tuned.localConcurrency,
    pollingIntervalSeconds: tuned.pollingIntervalSeconds,
    burstWhenBatchFull: tuned.burstWhenBatchFull,
    // perkey: at most one active job per group, counted in the database across every worker.
    ...(scenario === 'perkey' ? { groupConcurrency: 1 } : {}),
  };
  let producer = null;

  const openBoss = async () => {
    const boss = new PgBoss({ connectionString: databaseUrl, ...constructorOptions });
    boss.on('error', (err) => process.stderr.write(`pg-boss error: ${err.message}\n`));
    await boss.start();
    return boss;
  };

  return {
    schemas: [SCHEMA],
    config: {
      boss: constructorOptions,
      queue: { name: QUEUE, ...queueOptions },
      work: workOptions,
      handler: `batch handler, its jobs run with at most ${concurrency} in flight`,
      enqueueMany: describeChunks('boss.insert', tuned.insertChunk, tuned.insertParallel),
      enqueueOne: 'boss.send',
    },
    versions: packageVersions(['pg-boss', 'pg']),

    async install(admin) {
      await admin.dropSchema(SCHEMA);
      const boss = await openBoss(); // start() creates the schema
      try {
        await boss.createQueue(QUEUE, queueOptions);
      } finally {
        await boss.stop({ graceful: false, close: true });
      }
    },

    async openProducer() {
      producer = await openBoss();
    },

    async enqueueMany(n, { oneCall = false } = {}) {
      const jobs = Array.from({ length: n }, () => ({ data: {} }));
      await inChunks(jobs, oneCall ? 0 : tuned.insertChunk, tuned.insertParallel, (chunk) =>
        producer.insert(QUEUE, chunk),
      );
    },

    // perkey: job i goes to group k<i mod keys> (the `group` job option, pg-boss 12.18+).
    async enqueueKeyed(n, keys, { oneCall = false } = {}) {
      const jobs = Array.from({ length: n }, (_, i) => {
        const k = `k${i % keys}`;
        return { data: { k }, group: { id: k } };
      });
      await inChunks(jobs, oneCall ? 0 : tuned.insertChunk, tuned.insertParallel, (chunk) =>
        producer.insert(QUEUE, chunk),
      );
    },

    async enqueueOne(payload) {
      await producer.send(QUEUE, payload);
    },

    async closeProducer() {
      await producer?.stop({ graceful: false, close: true });
      producer = null;
    },

    async countJobs(admin) {
      return admin.count(`SELECT count(*) FROM ${SCHEMA}.job WHERE name = $1`, [QUEUE]);
    },

    async countDone(admin) {
      return admin.count(`SELECT count(*) FROM ${SCHEMA}.job WHERE name = $1 AND state = 'completed'`, [QUEUE]);
    },

    async startWorker({ onJob, onError }) {
      const boss = await openBoss();
      let stopping = false;
      boss.on('error', (err) => {
        if (!stopping) onError(err);
      });
      await boss.work(QUEUE, workOptions, async (jobs) => {
        for (let i = 0; i < jobs.length; i += concurrency) {
          await Promise.all(jobs.slice(i, i + concurrency).map((job) => onJob(job.data)));
        }
      });
      return {
        async stop() {
          stopping = true;
          await boss.stop({ graceful: true, close: true, timeout: 10_000 });
        },
      };
    },
  };
}
