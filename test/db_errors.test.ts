/**
 * The one place PostgreSQL errors are classified (src/errors.ts): what a read-only
 * server says, and what a loop may retry; and the connection budget of a supervisor.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { connectionBudget } from '../src/config/index.ts';
import { isReadOnlyDbError, isRetryableDbError, ReadOnlyServerError } from '../src/errors.ts';

describe('read-only servers', () => {
  it('25006, LISTEN/NOTIFY during recovery and the pool refusing a standby are read-only, and retryable', () => {
    const cases = [
      Object.assign(new Error('cannot execute UPDATE in a read-only transaction'), { code: '25006' }),
      Object.assign(new Error('cannot execute LISTEN during recovery'), { code: '25006' }),
      Object.assign(new Error('cannot execute pg_advisory_xact_lock() during recovery'), { code: '55000' }),
      new ReadOnlyServerError('the database server is in recovery'),
    ];
    for (const err of cases) {
      assert.equal(isReadOnlyDbError(err), true, err.message);
      assert.equal(isRetryableDbError(err), true, err.message);
    }
  });

  it('other errors are not read-only', () => {
    for (const err of [
      Object.assign(new Error('duplicate key value'), { code: '23505' }),
      Object.assign(new Error('Connection terminated unexpectedly'), {}),
      undefined,
    ])
      assert.equal(isReadOnlyDbError(err), false, String(err?.message));
  });
});

describe('connection budget', () => {
  it('counts the pool, LISTEN, the readiness probe and the tasks’ ctx.db', () => {
    assert.deepEqual(connectionBudget({ database: { poolSize: 6 }, pool: { maxThreads: 3, dbPoolSize: 2 } }), {
      pool: 6,
      listener: 1,
      readiness: 1,
      tasks: 6,
      total: 14,
    });
  });
});
