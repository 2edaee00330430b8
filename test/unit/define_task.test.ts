/**
 * defineTask at run time: the options given to it are the task's options, as
 * `export const options` would be, and the function is the task itself. Its
 * types (the payload reaching the task, enqueue and enqueueMany) are checked
 * by test/packaging/types.test.ts on the programs in test/fixtures/types/.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { readTaskOptions } from '../../src/worker/task_options.ts';

const TYPED = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/typed');

describe('defineTask', () => {
  it('gives the task its options, as export const options would', async () => {
    const problems: string[] = [];
    const options = await readTaskOptions([TYPED], 'send_invoice', (p) => problems.push(p));
    assert.deepEqual(problems, []);
    assert.deepEqual(options, { exclusiveThread: false, queue: 'default', timeoutMs: 30_000 });
  });

  it('returns the function itself, callable as the task', async () => {
    const task = (await import('../fixtures/typed/send_invoice.ts')).default;
    const ctx = { job: { attempt: 2 } } as Parameters<typeof task>[1];
    assert.deepEqual(task({ invoiceId: 7, email: 'b@example.com' }, ctx), {
      invoiceId: 7,
      to: 'b@example.com',
      attempt: 2,
    });
  });
});
