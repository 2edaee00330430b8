/**
 * The runtime role as the "Database roles" recipe of docs/operations/postgresql.md grants it, on a
 * database hardened so that PUBLIC may execute no function of the schema:
 * the grants copied from that page are exactly what a supervisor needs to claim
 * (claims call jobvisor.due_job_ids), complete and fail jobs.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { claimJobs } from '../../src/queue/claim.ts';
import { completeJobs, failJobs } from '../../src/queue/complete.ts';
import { enqueue, enqueueMany } from '../../src/queue/enqueue.ts';
import { createLoginRole, createTestDatabase, type LoginRole, type TestDatabase } from '../helpers/db.ts';

let db: TestDatabase;
let app: LoginRole;
let role = '';

/** The GRANT statements for existing objects of docs/operations/postgresql.md, with the role renamed. */
function readmeGrants(): string[] {
  const readme = readFileSync(new URL('../../docs/operations/postgresql.md', import.meta.url), 'utf8');
  const block = readme.slice(
    readme.indexOf('-- after the first `jobvisor migrate`'),
    readme.indexOf('-- and for what later migrations create:'),
  );
  const grants = block
    .split('\n')
    .filter((line) => line.startsWith('GRANT '))
    .map((line) => line.replace(/;.*$/, '').replaceAll('jobvisor_app', role));
  assert.ok(grants.length >= 4, `the role recipe of docs/operations/postgresql.md has its grants: ${block}`);
  return grants;
}

before(async () => {
  db = await createTestDatabase('runtime_role');
  app = await createLoginRole(db, 'jv_app');
  role = app.name;
  await db.pool.query('REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA jobvisor FROM PUBLIC');
});

after(async () => {
  await app?.pool.end();
  await db?.drop();
  await app?.drop();
});

describe('the runtime role of the PostgreSQL operations page', () => {
  it('without the EXECUTE grant cannot claim, and the error names the function', async () => {
    await db.pool.query(`GRANT USAGE ON SCHEMA jobvisor TO ${role}`);
    await db.pool.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA jobvisor TO ${role}`);
    await db.pool.query(`GRANT USAGE ON ALL SEQUENCES IN SCHEMA jobvisor TO ${role}`);
    await enqueueMany(app.pool, [{ kind: 'k', payload: {} }]);
    await assert.rejects(
      claimJobs({ db: app.pool, schema: 'jobvisor' }, { owner: 'o', queue: 'default', limit: 5, leaseMs: 60_000 }),
      /permission denied for function due_job_ids/,
    );
  });

  it('with the grants the page lists, enqueues, claims, completes and fails jobs', async () => {
    for (const grant of readmeGrants()) await db.pool.query(grant);
    const store = { db: app.pool, schema: 'jobvisor' };
    await enqueueMany(app.pool, [{ kind: 'k', payload: { n: 2 } }]);
    const jobs = await claimJobs(store, { owner: 'o', queue: 'default', limit: 5, leaseMs: 60_000 });
    assert.equal(jobs.length, 2);
    const [a, b] = jobs as [(typeof jobs)[0], (typeof jobs)[0]];
    assert.deepEqual([...(await completeJobs(store, 'o', [a.id], [a.token]))], []);
    const failed = await failJobs(store, 'o', {
      ids: [b.id],
      tokens: [b.token],
      permanent: [true],
      delaysMs: [0],
      errors: ['Error: no'],
    });
    assert.deepEqual(
      failed.map((f) => f.status),
      ['failed'],
    );
    // A workflow child of an existing job: its COMMIT settles the edge (jobvisor.new_edges, migration 023).
    await enqueue(app.pool, 'k', {}, { dependsOn: [a.id] });
    const { rows } = await db.pool.query('SELECT status, has_dependents FROM jobvisor.jobs ORDER BY id');
    assert.deepEqual(
      rows.map((r) => [r.status, r.has_dependents]),
      [
        ['done', true],
        ['failed', null],
        ['pending', null],
      ],
    );
  });
});
