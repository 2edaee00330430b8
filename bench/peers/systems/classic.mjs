// The classic PostgreSQL job queue, as a baseline: a jobs table with the classic
// columns, C independent loops that each claim ONE row with FOR UPDATE SKIP LOCKED
// in its own autocommit transaction and mark it done in another. Idle loops sleep
// until a statement-level NOTIFY from the insert trigger (or a 1 s poll) wakes them.
// Bulk enqueue is one multi-row INSERT … SELECT FROM unnest(...).
import pg from 'pg';
import { packageVersions } from '../lib/versions.mjs';
import { applyTune } from './tune.mjs';

const SCHEMA = 'peer_classic';
const CHANNEL = 'peer_classic_jobs';

const DDL = `
CREATE SCHEMA ${SCHEMA};
CREATE TABLE ${SCHEMA}.jobs (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  kind         text        NOT NULL,
  payload      jsonb       NOT NULL DEFAULT '{}',
  status       text        NOT NULL DEFAULT 'pending',
  attempts     int         NOT NULL DEFAULT 0,
  max_attempts int         NOT NULL DEFAULT 8,
  run_at       timestamptz NOT NULL DEFAULT now(),
  locked_until timestamptz,
  last_error   text,
  unique_key   text,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX jobs_pending_idx ON ${SCHEMA}.jobs (run_at, id) WHERE status = 'pending';
CREATE UNIQUE INDEX jobs_unique_key_idx ON ${SCHEMA}.jobs (kind, unique_key) WHERE unique_key IS NOT NULL;
CREATE FUNCTION ${SCHEMA}.notify_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('${CHANNEL}', '');
  RETURN NULL;
END $$;
CREATE TRIGGER jobs_notify AFTER INSERT ON ${SCHEMA}.jobs
  FOR EACH STATEMENT EXECUTE FUNCTION ${SCHEMA}.notify_jobs();
`;

const INSERT_MANY = `
INSERT INTO ${SCHEMA}.jobs (kind, payload)
SELECT kind, payload FROM unnest($1::text[], $2::jsonb[]) AS t(kind, payload)`;

const INSERT_ONE = `INSERT INTO ${SCHEMA}.jobs (kind, payload) VALUES ($1, $2)`;

const CLAIM_ONE = `
UPDATE ${SCHEMA}.jobs
   SET status = 'running', attempts = attempts + 1, locked_until = now() + interval '30 seconds'
 WHERE id = (SELECT id FROM ${SCHEMA}.jobs
              WHERE status = 'pending' AND run_at <= now()
              ORDER BY run_at, id
              LIMIT 1
              FOR UPDATE SKIP LOCKED)
RETURNING id, kind, payload`;

const COMPLETE_ONE = `UPDATE ${SCHEMA}.jobs SET status = 'done', locked_until = NULL WHERE id = $1`;

const DEFAULTS = { pollIntervalMs: 1000 };

export function create({ databaseUrl, concurrency, tune }) {
  const tuned = applyTune('classic', DEFAULTS, tune);
  let producer = null;

  return {
    schemas: [SCHEMA],
    config: {
      loops: concurrency,
      claim: 'one row per autocommit UPDATE … WHERE id = (SELECT … FOR UPDATE SKIP LOCKED LIMIT 1)',
      complete: 'one autocommit UPDATE per job',
      wake: `LISTEN ${CHANNEL} (statement-level NOTIFY on insert) + poll every ${tuned.pollIntervalMs} ms`,
      poolMax: concurrency,
      enqueueMany: 'one INSERT … SELECT FROM unnest($1::text[], $2::jsonb[])',
      ...tuned,
    },
    versions: packageVersions(['pg']),

    async install(admin) {
      await admin.dropSchema(SCHEMA);
      await admin.pool.query(DDL);
    },

    async openProducer() {
      producer = new pg.Pool({ connectionString: databaseUrl, max: 2, application_name: 'peerbench-classic-producer' });
    },

    async enqueueMany(n) {
      const kinds = new Array(n).fill('noop');
      const payloads = new Array(n).fill('{}');
      await producer.query(INSERT_MANY, [kinds, payloads]);
    },

    async enqueueOne(payload) {
      await producer.query(INSERT_ONE, ['noop', JSON.stringify(payload)]);
    },

    async closeProducer() {
      await producer?.end();
      producer = null;
    },

    async countJobs(admin) {
      return admin.count(`SELECT count(*) FROM ${SCHEMA}.jobs`);
    },

    async countDone(admin) {
      return admin.count(`SELECT count(*) FROM ${SCHEMA}.jobs WHERE status = 'done'`);
    },

    startWorker: ({ onJob, onError }) =>
      startLoops({ databaseUrl, concurrency, onJob, onError, pollIntervalMs: tuned.pollIntervalMs }),
  };
}

async function startLoops({ databaseUrl, concurrency, onJob, onError, pollIntervalMs }) {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: concurrency,
    application_name: 'peerbench-classic-worker',
  });
  const listener = new pg.Client({ connectionString: databaseUrl, application_name: 'peerbench-classic-listen' });
  let stopping = false;
  let generation = 0; // bumped on every NOTIFY, so a loop can tell it raced one
  let waiters = [];
  const wakeAll = () => {
    generation++;
    const ready = waiters;
    waiters = [];
    for (const wake of ready) wake();
  };
  const idle = (seenGeneration) =>
    new Promise((resolve) => {
      if (stopping || generation !== seenGeneration) return resolve();
      const timer = setTimeout(resolve, pollIntervalMs);
      waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });

  pool.on('error', () => {}); // idle-client errors; query errors reach the loops
  listener.on('error', (err) => {
    if (!stopping) onError(err);
  });
  await listener.connect();
  listener.on('notification', wakeAll);
  await listener.query(`LISTEN ${CHANNEL}`);

  const loop = async () => {
    while (!stopping) {
      const seen = generation;
      const { rows } = await pool.query(CLAIM_ONE);
      if (rows.length === 0) {
        await idle(seen);
        continue;
      }
      await onJob(rows[0].payload);
      await pool.query(COMPLETE_ONE, [rows[0].id]);
    }
  };
  const loops = Array.from({ length: concurrency }, loop);
  const all = Promise.all(loops);
  all.catch((err) => {
    if (!stopping) onError(err);
  });

  return {
    async stop() {
      stopping = true;
      wakeAll();
      try {
        await all.catch(() => {});
      } finally {
        await listener.end();
        await pool.end();
      }
    },
  };
}
