/**
 * The one place PostgreSQL errors are classified (src/errors.ts): what a read-only
 * server says, what a loop may retry, and what no retry changes (a connection
 * refused for good); and the connection budget of a supervisor.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { connectionBudget } from '../../src/config/index.ts';
import {
  accessRefused,
  connectionRefusal,
  DatabaseAccessError,
  isReadOnlyDbError,
  isRetryableDbError,
  ReadOnlyServerError,
} from '../../src/errors.ts';

/** An error as pg gives it: a server's has an SQLSTATE `code`, a socket's a Node code, pg's own none. */
const pgError = (message: string, code?: string) => Object.assign(new Error(message), code ? { code } : {});

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

describe('connections refused for good', () => {
  it('names the server’s reason and SQLSTATE for credentials, roles, databases, grants and pg_hba.conf', () => {
    const cases: Array<[Error, string, string | undefined]> = [
      [
        pgError('password authentication failed for user "app"', '28P01'),
        'password authentication failed for user "app" (SQLSTATE 28P01)',
        '28P01',
      ],
      [pgError('role "ghost" does not exist', '28000'), 'role "ghost" does not exist (SQLSTATE 28000)', '28000'],
      [
        pgError('role "app" is not permitted to log in', '28000'),
        'role "app" is not permitted to log in (SQLSTATE 28000)',
        '28000',
      ],
      [
        pgError('no pg_hba.conf entry for host "10.0.0.5", user "app", database "app", no encryption', '28000'),
        'no pg_hba.conf entry for host "10.0.0.5", user "app", database "app", no encryption (SQLSTATE 28000)',
        '28000',
      ],
      [pgError('database "appp" does not exist', '3D000'), 'database "appp" does not exist (SQLSTATE 3D000)', '3D000'],
      [
        pgError('permission denied for database "app"', '42501'),
        'permission denied for database "app" (SQLSTATE 42501)',
        '42501',
      ],
      [
        pgError('permission denied for schema jobvisor', '42501'),
        'permission denied for schema jobvisor (SQLSTATE 42501)',
        '42501',
      ],
      [
        pgError('database "app" is not currently accepting connections', '55000'),
        'database "app" is not currently accepting connections (SQLSTATE 55000)',
        '55000',
      ],
      [
        pgError('The server does not support SSL connections'),
        'The server does not support SSL connections',
        undefined,
      ],
      [
        pgError('SASL: SCRAM-SERVER-FIRST-MESSAGE: client password must be a string'),
        'SASL: SCRAM-SERVER-FIRST-MESSAGE: client password must be a string',
        undefined,
      ],
      [
        pgError('self-signed certificate', 'DEPTH_ZERO_SELF_SIGNED_CERT'),
        'self-signed certificate (DEPTH_ZERO_SELF_SIGNED_CERT)',
        undefined,
      ],
      [pgError('certificate has expired', 'CERT_HAS_EXPIRED'), 'certificate has expired (CERT_HAS_EXPIRED)', undefined],
    ];
    for (const [err, reason, sqlstate] of cases) {
      assert.deepEqual(connectionRefusal(err), sqlstate ? { reason, sqlstate } : { reason }, err.message);
      assert.equal(isRetryableDbError(err), false, `${err.message} is not retried`);
      const refused = accessRefused(err);
      assert.ok(refused instanceof DatabaseAccessError);
      assert.equal(refused.code, 'DB_ACCESS_REFUSED');
      assert.equal(refused.sqlstate, sqlstate);
      assert.equal(refused.message, `database access refused: ${reason}`);
      assert.equal(refused.cause, err);
    }
  });

  it('leaves transient failures, statements’ own errors and read-only servers to the retries', () => {
    for (const err of [
      pgError('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'),
      pgError('read ECONNRESET', 'ECONNRESET'),
      pgError('getaddrinfo ENOTFOUND db', 'ENOTFOUND'),
      pgError('the database system is starting up', '57P03'),
      pgError('the database system is in recovery mode', '57P03'),
      pgError('terminating connection due to administrator command', '57P01'),
      pgError('sorry, too many clients already', '53300'),
      pgError('connection failure', '08006'),
      pgError('Connection terminated unexpectedly'),
      pgError('timeout expired'),
      pgError('cannot execute LISTEN during recovery', '25006'),
      pgError('cannot execute pg_advisory_xact_lock() during recovery', '55000'),
      pgError('relation "jobvisor.jobs" does not exist', '42P01'),
      pgError('canceling statement due to statement timeout', '57014'),
      pgError('There was an error establishing an SSL connection'),
      new ReadOnlyServerError('the database server is in recovery'),
      undefined,
      null,
      'a string',
    ]) {
      assert.equal(connectionRefusal(err), undefined, String((err as Error | undefined)?.message ?? err));
      assert.equal(accessRefused(err), undefined);
    }
  });
});
