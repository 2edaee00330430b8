/**
 * Signals: `signal(db, jobId, name, payload)` sends a job the signal its
 * ctx.waitFor(name) waits for. It calls jobvisor.signal() (migration 028),
 * with the caller's connection, so a signal sent inside the caller's
 * transaction commits (and wakes the job) with it, and a rollback sends
 * nothing. Plain SQL does the same: SELECT jobvisor.signal(42, 'approved', '{"by": "ann"}').
 *
 * Input is checked before anything is sent, so bad input never aborts the
 * caller's transaction. A job that is finished, cancelled or missing is an
 * error the database raises (SQLSTATE JV001/JV002, mapped to SignalError
 * here), which does abort an open transaction, like any failed statement: a
 * caller that wants to go on passes `ignoreFinished`, which the function
 * checks without raising.
 */
import type { Db } from '../db/pool.ts';
import { InputError, JobvisorError, notMigrated } from '../errors.ts';
import { planned, run, type Store } from './sql.ts';
import { checkPayload, shown } from './validate.ts';

/** The largest signal payload, in bytes of JSON (the CHECK of job_signals says the same). */
export const MAX_SIGNAL_PAYLOAD_BYTES = 64 * 1024;
/** The longest signal (and step) name, in characters. */
export const MAX_SIGNAL_NAME = 200;

/**
 * What became of a signal:
 * - `woke`: the job was waiting for it; it is pending now and runs at once;
 * - `kept`: stored until the job's waitFor of that name takes it;
 * - `duplicate`: a signal of that name was sent to the job before; this one is ignored (the first wins);
 * - `late`: the job's wait of that name has already timed out; ignored;
 * - `ignored`: the job is finished or missing, and `ignoreFinished` was set.
 */
export type SignalOutcome = 'woke' | 'kept' | 'duplicate' | 'late' | 'ignored';

/** Options of signal(). */
export interface SignalOptions {
  /** A finished, cancelled or missing job: answer `ignored` instead of throwing. */
  ignoreFinished?: boolean;
  /** Schema of the jobs table; default "jobvisor". */
  schema?: string;
}

/**
 * A signal sent to a job that can never read it. Codes JOB_NOT_FOUND (no such
 * job, or deleted) and JOB_FINISHED (done, failed or cancelled; `status` says which).
 */
export class SignalError extends JobvisorError {
  constructor(
    code: 'JOB_NOT_FOUND' | 'JOB_FINISHED',
    message: string,
    readonly jobId: string,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
    this.name = 'SignalError';
  }
}

const SIGNAL = planned('signal', `SELECT jobvisor.signal($1::bigint, $2, $3::jsonb, $4::boolean) AS outcome`);

/**
 * Sends signal `name` with `payload` (any JSON value, at most 64 KiB; default
 * none) to job `jobId`, through `db`: a pg Pool, a Client, or a client inside
 * the caller's open transaction.
 * @returns what became of the signal (see SignalOutcome).
 * @throws InputError (nothing sent) for a bad id, name or payload;
 *   SignalError for a finished, cancelled or missing job unless `ignoreFinished`;
 *   NotMigratedError when the database has no signals yet.
 */
export async function signal<T = unknown>(
  db: Db,
  jobId: string | number | bigint,
  name: string,
  payload?: T,
  options: SignalOptions = {},
): Promise<SignalOutcome> {
  return signalThrough({ db, schema: options.schema ?? 'jobvisor' }, jobId, name, payload, options.ignoreFinished);
}

/**
 * signal(), through `store`: its statement bound applies (the dashboard's
 * statement_timeout, so a job row locked elsewhere cannot hold a request).
 * Same checks, outcomes and errors as signal().
 */
export async function signalThrough(
  store: Store,
  jobId: string | number | bigint,
  name: string,
  payload?: unknown,
  ignoreFinished = false,
): Promise<SignalOutcome> {
  const id = checkJobId(jobId);
  checkSignalName('signal name', name);
  const json = payload === undefined ? null : checkPayload('signal payload', payload, MAX_SIGNAL_PAYLOAD_BYTES);
  try {
    const [row] = await run<{ outcome: SignalOutcome }>(store, SIGNAL, [id, name, json, ignoreFinished]);
    return row?.outcome as SignalOutcome;
  } catch (err) {
    const code = (err as { code?: unknown } | undefined)?.code;
    const message = (err as { message?: string }).message ?? '';
    if (code === 'JV001') throw new SignalError('JOB_NOT_FOUND', `job ${id} does not exist`, id, { cause: err });
    if (code === 'JV002')
      throw new SignalError('JOB_FINISHED', message.replace(/^[a-z_0-9]+\.signal: /, ''), id, { cause: err });
    throw notMigrated(err, store.schema) ?? err;
  }
}

/** A job id: a positive integer (number, bigint or digits). @throws InputError */
export function checkJobId(jobId: unknown): string {
  const text = typeof jobId === 'number' || typeof jobId === 'bigint' ? String(jobId) : jobId;
  if (typeof text !== 'string' || !/^[1-9][0-9]{0,18}$/.test(text) || BigInt(text) > 9223372036854775807n)
    throw new InputError(`job id must be a positive integer, got ${shown(jobId)}`);
  return text;
}

/**
 * A signal or step name: 1 to 200 characters of well-formed text without NUL.
 * @throws InputError naming `field`
 */
export function checkSignalName(field: string, name: unknown): string {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_SIGNAL_NAME)
    throw new InputError(`${field} must be a string of 1 to ${MAX_SIGNAL_NAME} characters, got ${shown(name)}`);
  if (name.includes('\u0000') || !name.isWellFormed())
    throw new InputError(`${field} contains a NUL character or invalid UTF-16`);
  return name;
}
