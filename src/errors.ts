/**
 * Errors with a stable `code`. PostgreSQL error codes are mapped in one place
 * (`isRetryableDbError`, `isOutageError`, `isReadOnlyDbError`, `connectionRefusal`), which
 * decides what a loop may try again, what means "this server takes no writes: find the
 * primary", and what no retry can change (a wrong password, a missing database).
 */

export class JobvisorError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'JobvisorError';
    this.code = code;
  }
}

/** Bad input from a user: CLI arguments, enqueue options, payloads. Exit status 2. */
export class InputError extends JobvisorError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('INPUT_INVALID', message, options);
    this.name = 'InputError';
  }
}

/** A configuration that cannot be used. Exit status 2. */
export class ConfigError extends JobvisorError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('CONFIG_INVALID', message, options);
    this.name = 'ConfigError';
  }
}

/**
 * jobvisor's tables are missing (or older than this version): `jobvisor migrate`
 * has not run on this database. Code SCHEMA_NOT_MIGRATED; the pg error is the cause.
 */
export class NotMigratedError extends JobvisorError {
  constructor(schema: string, options?: { cause?: unknown }) {
    super(
      'SCHEMA_NOT_MIGRATED',
      `jobvisor's tables are missing or out of date in schema "${schema}" of this database: run \`jobvisor migrate\` (or migrate() from the API) first`,
      options,
    );
    this.name = 'NotMigratedError';
  }
}

/**
 * The NotMigratedError for a pg error about one of `schema`'s relations not
 * existing (SQLSTATE 42P01 undefined_table), or a column of its `jobs` table
 * missing (42703 undefined_column: a database migrated by an older version);
 * undefined for any other error, which the caller rethrows as it is.
 */
export function notMigrated(err: unknown, schema: string): NotMigratedError | undefined {
  const e = err as { code?: unknown; message?: unknown } | null | undefined;
  const message = typeof e?.message === 'string' ? e.message : '';
  const ours =
    (e?.code === '42P01' && message.includes(`relation "${schema}.`)) ||
    (e?.code === '42703' && /of relation "jobs"/.test(message));
  return ours ? new NotMigratedError(schema, { cause: err }) : undefined;
}

/**
 * A task that cannot run, found at start (run(), `jobvisor start`), which it
 * stops: codes TASKS_DIR_MISSING, TASK_FILE_MISSING, TASK_NO_TS_LOADER
 * (exit status 2: bad configuration), TASK_IMPORT_FAILED, TASK_INVALID (exit status 1).
 */
export class TaskSetupError extends JobvisorError {
  constructor(
    code: 'TASKS_DIR_MISSING' | 'TASK_FILE_MISSING' | 'TASK_NO_TS_LOADER' | 'TASK_IMPORT_FAILED' | 'TASK_INVALID',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
    this.name = 'TaskSetupError';
  }

  /** Whether the configuration is what is wrong (exit status 2) rather than the module's code (1). */
  get badConfig(): boolean {
    return this.code === 'TASKS_DIR_MISSING' || this.code === 'TASK_FILE_MISSING' || this.code === 'TASK_NO_TS_LOADER';
  }
}

/**
 * ctx.parents() of a job whose parents' results are too large to hand back as
 * one array (code PARENTS_TOO_LARGE). Permanent: a retry reads the same
 * parents; the task reads them one at a time with ctx.eachParent() instead.
 */
export class ParentsTooLargeError extends JobvisorError {
  readonly permanent = true;
  constructor(jobId: string, maxChars: number) {
    super(
      'PARENTS_TOO_LARGE',
      `ctx.parents(): the parents of job ${jobId} hold more than ${maxChars / 1024 / 1024} MiB of results; read them one at a time with ctx.eachParent()`,
    );
    this.name = 'ParentsTooLargeError';
  }
}

/** An SQLSTATE (its classes are 00–58, F0, HV, P0 and XX), as opposed to a Node error code such as EPIPE. */
const SQLSTATE = /^([0-5][0-9A-Z]|F0|HV|P0|XX)[0-9A-Z]{3}$/;
/** SQLSTATEs after which the session is gone or going: class 08 and the shutdowns. */
const SESSION_ENDED = /^(08|57P0[1-3])/;

/**
 * True when `err` means the connection cannot be trusted again: a connection
 * exception, a server shutdown, or an error without an SQLSTATE (a socket
 * error, `Connection terminated`, or a failure of the caller's own code in the
 * middle of a session). A statement's own error (a constraint, a timeout)
 * leaves the connection usable.
 */
export function isConnectionLost(err: Error & { code?: unknown }): boolean {
  const code = typeof err.code === 'string' ? err.code : '';
  return !SQLSTATE.test(code) || SESSION_ENDED.test(code);
}

/** SQLSTATE classes and codes a loop may retry after a pause. */
const RETRYABLE_SQLSTATE = new Set([
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '55P03', // lock_not_available
  '57P01', // admin_shutdown (server restarting, or pg_terminate_backend)
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up)
  '53300', // too_many_connections
  '53400', // configuration_limit_exceeded
  '08000',
  '08003',
  '08006',
  '08001',
  '08004', // connection exceptions
]);
const RETRYABLE_NODE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
]);

/** True when the error is a lost connection, a restart or a transient conflict. */
export function isRetryableDbError(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  if (!e) return false;
  // A read-only server is left for a writable one: retried on a new connection.
  if (isReadOnlyDbError(err)) return true;
  if (e.code && (RETRYABLE_SQLSTATE.has(e.code) || RETRYABLE_NODE_CODES.has(e.code))) return true;
  const message = e.message ?? '';
  return /Connection terminated|connection timeout|Client has encountered a connection error|timeout exceeded when trying to connect|Client was closed/i.test(
    message,
  );
}

/** Transient conflicts are retryable but say nothing about the database being away. */
const CONFLICT_SQLSTATE = new Set(['40001', '40P01', '55P03']);

/** An error that means "the database is unreachable or restarting", nothing about the loop's own work. */
export function isOutageError(err: unknown): boolean {
  return isRetryableDbError(err) && !CONFLICT_SQLSTATE.has((err as { code?: string } | undefined)?.code ?? '');
}

/**
 * A server that takes no writes: a standby, a primary demoted and restarted as
 * one, or a server set to `default_transaction_read_only`. SQLSTATE 25006
 * (read_only_sql_transaction) covers writes and LISTEN/NOTIFY during recovery
 * ("cannot execute LISTEN during recovery"); locks a standby cannot take say
 * "recovery is in progress" (55000). `DB_READ_ONLY` is what a pool says when it
 * refuses a new connection to such a server (src/db/pool.ts).
 */
export function isReadOnlyDbError(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  if (!e) return false;
  if (e.code === '25006' || e.code === 'DB_READ_ONLY') return true;
  return /during recovery|recovery is in progress|read-only transaction/i.test(e.message ?? '');
}

/** The server reached is read-only: its connections are dropped and a writable primary is waited for. */
export class ReadOnlyServerError extends JobvisorError {
  constructor(message: string) {
    super('DB_READ_ONLY', message);
    this.name = 'ReadOnlyServerError';
  }
}

/**
 * SQLSTATEs with which a server turns a connection (or the first look at
 * jobvisor's schema) away for a reason that no retry changes: someone has to
 * fix the credentials, the role, the database's name, a grant or pg_hba.conf.
 */
const REFUSED_SQLSTATE = new Set([
  '28000', // invalid_authorization_specification: no pg_hba.conf entry (", no encryption": the server wants SSL), role NOLOGIN or missing (trust/peer)
  '28P01', // invalid_password: a wrong password, and a missing role under password authentication
  '3D000', // invalid_catalog_name: the database does not exist
  '42501', // insufficient_privilege: no CONNECT on the database, no USAGE on jobvisor's schema
]);
/** pg's own errors (no SQLSTATE) that no retry changes: the server has no SSL, no password to send. */
const REFUSED_CLIENT_MESSAGE =
  /^(The server does not support SSL connections|SASL: SCRAM-SERVER-FIRST-MESSAGE: client password must be|SASL: Only mechanism|Password must be a string)/;
/** Node's TLS errors: the server's certificate is not one this client trusts. */
const REFUSED_TLS_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** Why the server refuses us for good: its words, and its SQLSTATE when it gave one. */
export interface ConnectionRefusal {
  reason: string;
  sqlstate?: string;
}

/**
 * The refusal in `err`, an error from opening a connection or from its first
 * statements on jobvisor's schema, when no retry can change it: a wrong
 * password (28P01), a missing or NOLOGIN role or a pg_hba.conf rule (28000),
 * a missing database (3D000), a missing grant (42501), a database closed to
 * connections (55000, `datallowconn`), a server without the SSL the client
 * requires, a server certificate not trusted, no password to send. Undefined
 * for everything else, transient ones included (refused, reset, a server
 * starting up 57P03, shutting down or in recovery, too many connections
 * 53300, a DNS name not resolved yet): those are retried.
 */
export function connectionRefusal(err: unknown): ConnectionRefusal | undefined {
  const e = err as { code?: unknown; message?: unknown } | null | undefined;
  const code = typeof e?.code === 'string' ? e.code : undefined;
  const message = typeof e?.message === 'string' ? e.message : '';
  if (code && SQLSTATE.test(code)) {
    const closed = code === '55000' && /is not (currently )?accepting connections/.test(message);
    if (!REFUSED_SQLSTATE.has(code) && !closed) return undefined;
    return { reason: `${message} (SQLSTATE ${code})`, sqlstate: code };
  }
  if (code && REFUSED_TLS_CODES.has(code)) return { reason: `${message} (${code})` };
  return REFUSED_CLIENT_MESSAGE.test(message) ? { reason: message } : undefined;
}

/**
 * The database refuses this process for a reason no retry changes
 * (`connectionRefusal`): run() rejects with it and `jobvisor start` exits 1
 * naming it, instead of waiting as for an unreachable server. Code
 * DB_ACCESS_REFUSED; `sqlstate` is the server's code when it gave one; the pg
 * error is the cause.
 */
export class DatabaseAccessError extends JobvisorError {
  readonly sqlstate: string | undefined;
  constructor(refusal: ConnectionRefusal, options?: { cause?: unknown }) {
    super('DB_ACCESS_REFUSED', `database access refused: ${refusal.reason}`, options);
    this.name = 'DatabaseAccessError';
    this.sqlstate = refusal.sqlstate;
  }
}

/** `err` as a DatabaseAccessError when it is a refusal no retry changes; undefined otherwise. */
export function accessRefused(err: unknown): DatabaseAccessError | undefined {
  const refusal = connectionRefusal(err);
  return refusal ? new DatabaseAccessError(refusal, { cause: err }) : undefined;
}

/** The message of a thrown value: an Error's (or any object's) message, else the value as text. */
export function messageOf(err: unknown): string {
  const text = (err as { message?: unknown } | null | undefined)?.message;
  return typeof text === 'string' ? text : String(err);
}
