/**
 * The storage migrations of issue 28 on a table of a million rows: a database
 * migrated up to 019, filled with 1,000,000 jobs (pending, running, done and
 * failed, finished over two days), then migrated to the end while an
 * application enqueues a job every few milliseconds. Every job is kept (the
 * same rows, by status, with the same ids), and no enqueue waited longer than
 * the migration's lock timeout.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { MIGRATIONS_DIR, migrate } from '../../src/db/migrate.ts';
import { enqueue } from '../../src/queue/enqueue.ts';
import { adminQuery, urlOf } from '../helpers/db.ts';

const ROWS = 1_000_000;
const LAST_BEFORE = 19;
const LOCK_TIMEOUT_MS = 3000;
const name = `t_migrate_storage_${randomBytes(4).toString('hex')}`;
let pool: pg.Pool;
let older: string;

before(async () => {
  await adminQuery(`CREATE DATABASE ${name}`);
  pool = new pg.Pool({ connectionString: urlOf(name), max: 4, application_name: 'test' });
  pool.on('error', () => {});
  older = mkdtempSync(path.join(tmpdir(), 'jobvisor-migrations-'));
  for (const f of readdirSync(MIGRATIONS_DIR))
    if (Number.parseInt(f, 10) <= LAST_BEFORE) copyFileSync(path.join(MIGRATIONS_DIR, f), path.join(older, f));
  await migrate(pool, { dir: older });
  await pool.query(
    `INSERT INTO jobvisor.jobs (queue, kind, payload, status, attempts, run_at, started_at, finished_at, locked_by,
                                locked_until, lease_token, last_error)
     SELECT 'q' || (i % 3), 'k' || (i % 7), jsonb_build_object('i', i), s,
            CASE WHEN s = 'pending' THEN 0 ELSE 1 END, now() - interval '2 days',
            CASE WHEN s <> 'pending' THEN now() - (i % 2880) * interval '1 minute' END,
            CASE WHEN s IN ('done', 'failed') THEN now() - (i % 2880) * interval '1 minute' END,
            CASE WHEN s <> 'pending' THEN 'old-supervisor' END,
            CASE WHEN s = 'running' THEN now() + interval '1 hour' END,
            CASE WHEN s = 'running' THEN i END,
            CASE WHEN s = 'failed' THEN 'Error: kept' END
       FROM (SELECT i, (ARRAY['pending', 'running', 'done', 'failed'])[1 + i % 4] AS s
               FROM generate_series(1, ${ROWS}) AS i) AS g`,
  );
  await pool.query('ANALYZE jobvisor.jobs');
});

after(async () => {
  rmSync(older, { recursive: true, force: true });
  await pool?.end();
  await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
});

const census = async () =>
  (
    await pool.query<{ status: string; n: string; ids: string }>(
      `SELECT status, count(*) AS n, sum(id) AS ids FROM jobvisor.jobs WHERE kind <> 'arrival' GROUP BY status ORDER BY status`,
    )
  ).rows;

describe(`the migrations after ${LAST_BEFORE} on a table of ${ROWS.toLocaleString('en')} jobs`, () => {
  it('keep every job and let enqueues through within the lock timeout', async () => {
    const pending = readdirSync(MIGRATIONS_DIR).filter(
      (f) => Number.parseInt(f, 10) > LAST_BEFORE && f.endsWith('.sql'),
    );
    assert.ok(pending.length > 0, 'there is a migration after 019 to apply');
    const before = await census();
    assert.deepEqual(
      before.map((r) => [r.status, Number(r.n)]),
      ['done', 'failed', 'pending', 'running'].map((s) => [s, ROWS / 4]),
    );
    let stop = false;
    const waits: number[] = [];
    const arrivals = (async () => {
      while (!stop) {
        const t0 = performance.now();
        await enqueue(pool, 'arrival', {});
        waits.push(performance.now() - t0);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    let applied: string[];
    try {
      await new Promise((r) => setTimeout(r, 50)); // the enqueuer is in its loop
      applied = await migrate(pool, { lockTimeoutMs: LOCK_TIMEOUT_MS });
    } finally {
      stop = true;
      await arrivals;
    }
    assert.deepEqual(
      applied,
      pending.map((f) => f.replace(/\.sql$/, '')),
    );
    assert.deepEqual(await census(), before, 'every job is kept, by status, with the same ids');
    const longest = Math.max(...waits);
    process.stdout.write(
      `# migrations ${applied.join(', ')}: ${waits.length} enqueues meanwhile, the longest took ${longest.toFixed(1)} ms\n`,
    );
    assert.ok(waits.length > 0, 'the application enqueued while the migration ran');
    assert.ok(longest < LOCK_TIMEOUT_MS, `an enqueue waited ${longest.toFixed(0)} ms, past the lock timeout`);
  });
});
