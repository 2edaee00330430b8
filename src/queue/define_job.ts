/**
 * `defineJob<P>(kind, defaults?)`: a kind declared where jobs are enqueued,
 * with its payload type and its queue, priority and attempts. It imports
 * nothing of the task or the worker, so a web process that only enqueues
 * imports it from a small module shared with the worker:
 *
 * ```ts
 * // jobs.ts
 * export const sendInvoice = defineJob<{ invoiceId: number }>('send_invoice', { queue: 'mail' });
 * // anywhere
 * await enqueue(db, sendInvoice, { invoiceId: 1 });              // queue "mail"
 * await enqueueMany(db, [sendInvoice.job({ invoiceId: 2 }), sendInvoice.job({ invoiceId: 3 }, { priority: -1 })]);
 * ```
 * A job's queue is what the call names, else the handle's, else "default":
 * the same in every process, whatever tasks a supervisor beside it has read.
 */
import { InputError } from '../errors.ts';
import { closestKey } from '../suggest.ts';
import { validateJob, withDefaults } from './enqueue.ts';
import type { DynamicKind, JobDefaults, JobDefinition, JobSpec } from './enqueue_types.ts';

const KEYS: ReadonlyArray<keyof JobDefaults> = ['queue', 'priority', 'maxAttempts'];

/**
 * Declares a kind: `P` types its payload wherever the handle is used.
 * @throws InputError at once for a bad kind, an unknown key, or a bad queue, priority or maxAttempts.
 */
export function defineJob<P = unknown>(kind: string, defaults: JobDefaults = {}): JobDefinition<P> {
  if (typeof defaults !== 'object' || defaults === null || Array.isArray(defaults))
    throw new InputError('defineJob(kind, defaults?): defaults must be an object');
  for (const key of Object.keys(defaults)) {
    if (KEYS.includes(key as keyof JobDefaults)) continue;
    const near = closestKey(key, KEYS);
    throw new InputError(
      `defineJob ${JSON.stringify(kind)}: unknown option ${JSON.stringify(key)}${near ? ` (did you mean ${JSON.stringify(near)}?)` : ''}; it takes ${KEYS.join(', ')}`,
    );
  }
  const options = Object.freeze({ ...defaults });
  try {
    validateJob(kind, {}, options);
  } catch (err) {
    throw err instanceof InputError ? new InputError(`defineJob: ${err.message}`, { cause: err.cause }) : err;
  }
  return Object.freeze({
    kind,
    options,
    job: (payload: P, jobOptions: Omit<JobSpec, 'kind' | 'payload'> = {}): JobSpec<DynamicKind> => ({
      ...withDefaults(options, jobOptions),
      kind: kind as DynamicKind,
      payload,
    }),
  });
}
