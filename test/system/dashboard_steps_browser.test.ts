/**
 * A job's durable steps on its page in a real browser (Debian's chromium
 * driven by playwright-core), with a real supervisor process running the
 * task: the page shows the recorded steps (a secret in a result redacted) and
 * the signal the job waits for; a payload that is not JSON is refused with a
 * clear error and sends nothing; a signal sent from the form wakes the job,
 * which finishes with that payload; a signal sent from a page left open on a
 * job cancelled since shows why it was refused.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../helpers/browser.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { serveTestDashboard, type ServedDashboard } from '../helpers/dashboard.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';
import { spawnSupervisor, type SpawnedSupervisor } from '../helpers/supervisor.ts';
import { CHROMIUM, skipUnless } from '../helpers/tools.ts';

describe(
  'steps and signals on the job page in a real browser',
  { skip: skipUnless(CHROMIUM), timeout: 240_000 },
  () => {
    let t: TestDatabase;
    let d: ServedDashboard;
    let browser: Browser;
    let page: Page;
    let supervisor: SpawnedSupervisor;

    const ops = [
      ['step', 'charge'],
      ['value', 'login', { user: 'ann', token: 'tok-5ecret-77' }],
      ['wait', 'approve', '1d'],
    ];
    const job = async (id: string) =>
      (
        await t.pool.query<{ status: string; result: { results: unknown[] } | null }>(
          'SELECT status, result FROM jobvisor.jobs WHERE id = $1',
          [id],
        )
      ).rows[0];
    const enqueueWaiting = async () => {
      const { rows } = await t.pool.query<{ id: string }>(
        `INSERT INTO jobvisor.jobs (kind, payload) VALUES ('durable', $1) RETURNING id`,
        [JSON.stringify({ ops })],
      );
      const id = rows[0]?.id as string;
      await until(
        'the job waits for its signal',
        () => job(id),
        (j) => j?.status === 'waiting',
        30_000,
      );
      return id;
    };
    const signals = async (id: string) =>
      (await t.pool.query('SELECT name FROM jobvisor.job_signals WHERE job_id = $1', [id])).rows;

    before(async () => {
      t = await createTestDatabase();
      // Open (no token), as on a developer's loopback: credentials are covered over HTTP.
      d = await serveTestDashboard({ pool: t.pool, auth: false });
      supervisor = await spawnSupervisor({
        databaseUrl: t.url,
        tasksDir: FIXTURE_TASKS,
        config: { pool: { maxThreads: 1 }, poll: { interval: '200ms' } },
      });
      browser = await launchChromium();
      page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    });
    after(async () => {
      await browser?.close();
      await supervisor?.stop();
      await d?.close();
      await t?.drop();
    });

    it('shows the steps and the wait, refuses bad JSON, and wakes the job with the payload sent', async () => {
      const id = await enqueueWaiting();
      await page.goto(`${d.url}jobs/${id}`);
      const steps = page.locator('#steps tbody tr');
      assert.equal(await steps.count(), 3);
      assert.match(
        await steps.nth(0).innerText(),
        /charge\s+step\s+1\s+.*\d+ ms\s+\{"at": "1970-01-01T00:00:00.000Z"/s,
      );
      const login = await page.locator('tr[data-step="login"] td.result').innerText();
      assert.match(login, /"user": "ann"/);
      assert.match(login, /"token":"\[redacted\]"/);
      assert.ok(!(await page.content()).includes('tok-5ecret-77'), 'the secret is never on the page');
      assert.match(
        await page.locator('#parked').innerText(),
        /^Waiting for signal approve until \d{4}-.*times out\)\.$/,
      );
      assert.equal(await page.locator('details.signal').getAttribute('open'), '', 'opened for a waiting job');
      assert.equal(await page.locator('#signal-form input[name=name]').inputValue(), 'approve');

      await page.locator('#signal-form textarea[name=payload]').fill('{by: "ann"}');
      await page.getByRole('button', { name: 'Send signal' }).click();
      await page.waitForURL(/\/signal$/);
      assert.equal(await page.locator('h1').innerText(), 'Bad signal');
      assert.match(
        await page.locator('.flash.error').innerText(),
        /^The payload is not JSON \(.+\); nothing was sent\./,
      );
      assert.deepEqual(await signals(id), []);
      assert.equal((await job(id))?.status, 'waiting');

      await page.goto(`${d.url}jobs/${id}`);
      await page.locator('#signal-form textarea[name=payload]').fill('{"by": "ann"}');
      await page.getByRole('button', { name: 'Send signal' }).click();
      await page.waitForURL(/\?done=signal-woke$/);
      assert.match(await page.locator('.flash').innerText(), /Signal sent: the job was waiting for it and runs now\./);
      const done = await until(
        'the job finishes',
        () => job(id),
        (j) => j?.status === 'done',
        30_000,
      );
      assert.deepEqual(done?.result?.results.at(-1), { received: true, payload: { by: 'ann' } });
      await page.reload();
      assert.match(await page.locator('tr[data-step="approve"] td.result').innerText(), /"payload": \{"by": "ann"\}/);
      assert.equal(await page.locator('#parked').count(), 0);
      assert.equal(await page.locator('#signal-form').count(), 0, 'no form on a finished job');
    });

    it('a page left open on a job cancelled since shows why its signal was refused', async () => {
      const id = await enqueueWaiting();
      await page.goto(`${d.url}jobs/${id}`);
      await t.pool.query(`UPDATE jobvisor.jobs SET status = 'cancelled', finished_at = now() WHERE id = $1`, [id]);
      await page.locator('#signal-form textarea[name=payload]').fill('{"by": "ann"}');
      await page.getByRole('button', { name: 'Send signal' }).click();
      await page.waitForURL(/\/signal$/);
      assert.equal(await page.locator('h1').innerText(), 'Signal refused');
      assert.match(
        await page.locator('.flash.error').innerText(),
        new RegExp(`^job ${id} is cancelled, so no wait of it can receive signal "approve"; nothing was sent\\.$`),
      );
      assert.deepEqual(await signals(id), []);
    });
  },
);
