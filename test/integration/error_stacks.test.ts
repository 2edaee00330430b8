/**
 * Stack traces of failed attempts: captured in the worker thread (frame lines
 * only, bounded), kept per attempt in the `errors` history, and shown by
 * `jobs show`, the dashboard's job page (folded) and the failure log line,
 * which is a warning. `last_error` stays the one-line message.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { describe as describeJob } from '../../src/cli/jobs_show.ts';
import { getJob } from '../../src/queue/admin/index.ts';
import { enqueue } from '../../src/queue/enqueue.ts';
import { logEvents } from '../../src/run/logging.ts';
import type { Supervisor } from '../../src/supervisor/supervisor.ts';
import { MAX_STACK, stackFrames, toTaskError } from '../../src/worker/convert.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { serveTestDashboard, TEST_TOKEN, type ServedDashboard } from '../helpers/dashboard.ts';
import { nextEvent, startSupervisor } from '../helpers/inprocess.ts';

describe('stack frames of a task error', () => {
  it('keep the frame lines only: no header, none of a multi-line message', () => {
    const err = new Error('first line\nsecret=hunter2');
    const e = toTaskError(err);
    assert.equal(e.message, 'first line\nsecret=hunter2');
    assert.ok(e.stack, 'a stack is kept');
    assert.doesNotMatch(e.stack, /hunter2|first line/);
    for (const line of e.stack.split('\n')) assert.match(line, /^at /);
    assert.match(e.stack, /error_stacks\.test\.ts/);
  });

  it('are bounded at a frame, and a hand-made stack without frames gives none', () => {
    const frame = `    at f (file:///app/${'x'.repeat(90)}.js:1:1)`;
    const long = ['Error: big', ...Array.from({ length: 200 }, () => frame)].join('\n');
    const kept = stackFrames(long);
    assert.ok(kept.length <= MAX_STACK && kept.length > MAX_STACK - 200, `${kept.length} characters`);
    assert.ok(kept.split('\n').every((l) => l === frame.trim()));
    assert.equal(toTaskError(Object.assign(new Error('x'), { stack: 'password=abc\nno frames' })).stack, undefined);
  });
});

describe('a failed job keeps each attempt’s stack', () => {
  let db: TestDatabase;
  let supervisor: Supervisor;
  let dashboard: ServedDashboard;
  const lines: Array<Record<string, unknown>> = [];

  before(async () => {
    db = await createTestDatabase('error_stacks');
    supervisor = startSupervisor(db.url, {
      backoff: { base: '10ms', max: '20ms', jitter: 0 },
      pool: { maxThreads: 1 },
    });
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString().split('\n').filter(Boolean))
          lines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    logEvents(supervisor.events, pino({ level: 'info' }, sink));
    await supervisor.start();
    dashboard = await serveTestDashboard({ pool: db.pool });
  });

  after(async () => {
    await dashboard.close();
    await supervisor.stop();
    await db.drop();
  });

  it('in the errors history, jobs show, the job page and a warn log line', async () => {
    const dead = nextEvent(supervisor, 'job:dead');
    const { id } = await enqueue(
      db.pool,
      'fail_deep',
      { key: 'sk_live_payload_secret', token: 'tok_redacted_on_the_page' },
      { maxAttempts: 2 },
    );
    await dead;
    const { rows } = await db.pool.query('SELECT last_error, errors FROM jobvisor.jobs WHERE id = $1', [id]);
    const row = rows[0] as { last_error: string; errors: Array<{ attempt: number; error: string; stack?: string }> };
    assert.equal(row.last_error, 'Error: card declined\nkey=sk_live_payload_secret', 'last_error is the message');
    assert.equal(row.errors.length, 2);
    for (const e of row.errors) {
      assert.match(e.stack ?? '', /^at charge \(file:\/\/\/.*fail_deep\.js:4:\d+\)\nat failDeep /, e.stack);
      assert.doesNotMatch(e.stack ?? '', /sk_live|card declined/, 'the stack carries no text of the message');
    }

    const job = await getJob({ db: db.pool, schema: 'jobvisor' }, id);
    assert.ok(job);
    const failures = job.timeline.filter((e) => e.event === 'failed');
    assert.equal(failures.length, 2);
    assert.ok(failures.every((e) => e.stack?.startsWith('at charge')));
    const shown = describeJob(job);
    assert.match(shown, /failed \(attempt 1\): Error: card declined\n {4}key=sk_live_payload_secret\n {6}at charge \(/);

    const page = await fetch(`${dashboard.url}jobs/${id}`, { headers: { authorization: `Bearer ${TEST_TOKEN}` } });
    const html = await page.text();
    assert.equal(page.status, 200);
    const folded = [...html.matchAll(/<details class="stack">\s*<summary>stack<\/summary>\s*<pre>([^<]*)<\/pre>/g)];
    assert.equal(
      folded.length,
      2,
      'one folded stack per failed attempt, in the attempts table (not again in the timeline)',
    );
    assert.match(folded[0]?.[1] ?? '', /^at charge \(file:/);
    assert.ok(!html.includes('tok_redacted_on_the_page'), 'dashboard.redact still applies to the payload');
    assert.ok(html.includes('[redacted]'));

    const retried = lines.find((l) => l.msg === 'job failed, retry scheduled');
    assert.ok(retried, 'a failure line');
    assert.equal(retried.level, 40, 'warn, not info');
    assert.match(String(retried.stack), /^at charge \(/);
    const deadLine = lines.find((l) => l.msg === 'job dead-lettered');
    assert.match(String(deadLine?.stack), /^at charge \(/);
  });
});
