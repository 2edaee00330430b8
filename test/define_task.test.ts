/**
 * defineTask and per-kind payload types. Most of this file is checked by the
 * compiler (`tsc --noEmit -p tsconfig.check.json`, run by `npm test`): each
 * `@ts-expect-error` line must be an error, or the type check fails. The
 * runtime part checks that the options given to defineTask are the task's
 * options, as `export const options` would be.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import {
  defineTask,
  enqueue,
  enqueueMany,
  signal,
  type JobSpec,
  type PayloadOfTask,
  type SignalsOf,
} from '../src/index.ts';
import { readTaskOptions } from '../src/worker/task_options.ts';
import type sendInvoice from './fixtures/typed/send_invoice.ts';

declare module '../src/queue/enqueue_types.ts' {
  interface TaskPayloads {
    send_invoice: PayloadOfTask<typeof sendInvoice>;
  }
}

const TYPED = path.resolve(path.dirname(fileURLToPath(import.meta.url)), 'fixtures/typed');

/** Never called: the compiler checks these calls. */
export function typeChecks(db: pg.Pool): void {
  void enqueue(db, 'send_invoice', { invoiceId: 1, email: 'a@example.com' });
  // @ts-expect-error a wrong payload type for a defined task
  void enqueue(db, 'send_invoice', { invoiceId: '1', email: 'a@example.com' });
  // @ts-expect-error a missing payload field
  void enqueue(db, 'send_invoice', { invoiceId: 1 });
  // A kind nobody declared takes any payload (rolling deploys, other languages' tasks).
  void enqueue(db, 'not_declared', { anything: true });

  void enqueueMany(db, [
    { kind: 'send_invoice', payload: { invoiceId: 1, email: 'a@example.com' } },
    { kind: 'welcome_email', payload: { user_id: 1 } },
    { kind: 'not_declared', payload: [1, 2] },
  ]);
  void enqueueMany(db, [
    { kind: 'welcome_email', payload: { user_id: 1 } },
    // @ts-expect-error enqueueMany checks each job's payload against its own kind
    { kind: 'send_invoice', payload: { user_id: 1 } },
  ]);
  // @ts-expect-error a wrong payload for a built-in kind in a batch
  void enqueueMany(db, [{ kind: 'welcome_email', payload: { user_id: 'x' } }]);

  // The old call forms still compile: a JobSpec[] built elsewhere, and one of a known kind.
  const built: JobSpec[] = [{ kind: 'welcome_email', payload: { user_id: 1 } }];
  void enqueueMany(db, built);
  const typed: JobSpec<'welcome_email'>[] = [{ kind: 'welcome_email', payload: { user_id: 2 } }];
  void enqueueMany(db, typed, { schema: 'jobvisor' });

  // The task's own argument has the payload type.
  defineTask<{ n: number }>((payload) => {
    const n: number = payload.n;
    // @ts-expect-error the payload has no such field
    return payload.m ?? n;
  });

  // Steps are typed by their fn; a declared signal's payload by the declaration.
  const approve = defineTask<{ id: number }, { approved: { by: string } }>(async (payload, ctx) => {
    const n: number = await ctx.step('n', () => payload.id);
    const key: string = await ctx.step('key', async (step) => Promise.resolve(step.key));
    // @ts-expect-error a step's result has its fn's type
    const wrong: string = await ctx.step('wrong', () => 1);
    const approval = await ctx.waitFor('approved', { timeout: '2d' });
    if (approval.received) {
      const by: string = approval.payload.by;
      // @ts-expect-error the declared payload has no such field
      void approval.payload.when;
      void by;
    }
    const other = await ctx.waitFor('undeclared', { timeout: new Date() });
    // @ts-expect-error an undeclared signal's payload is unknown
    if (other.received) void other.payload.anything;
    await ctx.sleep('nap', '1h');
    return { n, key, wrong };
  });
  const approvePayload: PayloadOfTask<typeof approve> = { id: 1 };
  void approvePayload;
  void approve;
  void signal<SignalsOf<typeof approve>['approved']>(db, 1, 'approved', { by: 'ann' });
  // @ts-expect-error the payload does not match the declared signal
  void signal<SignalsOf<typeof approve>['approved']>(db, 1, 'approved', { by: 1 });
}

describe('defineTask', () => {
  it('gives the task its options, as export const options would', async () => {
    const problems: string[] = [];
    const options = await readTaskOptions([TYPED], 'send_invoice', (p) => problems.push(p));
    assert.deepEqual(problems, []);
    assert.deepEqual(options, { exclusiveThread: false, queue: 'default', timeoutMs: 30_000 });
  });

  it('returns the function itself, callable as the task', async () => {
    const task = (await import('./fixtures/typed/send_invoice.ts')).default;
    const ctx = { job: { attempt: 2 } } as Parameters<typeof task>[1];
    assert.deepEqual(task({ invoiceId: 7, email: 'b@example.com' }, ctx), {
      invoiceId: 7,
      to: 'b@example.com',
      attempt: 2,
    });
  });
});
