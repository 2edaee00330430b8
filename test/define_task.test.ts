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
import { defineTask, enqueue, enqueueMany, type JobSpec, type PayloadOfTask } from '../src/index.ts';
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
