/**
 * The operator's controls in a real browser (Debian's chromium driven by
 * playwright-core) against a real database and a real supervisor process:
 * pausing a queue stops its jobs from starting until it is resumed, bulk
 * actions on ticked rows, the scheduled filter, and only applicable actions.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { seedDeadLetters, serveTestDashboard, type ServedDashboard } from '../helpers/dashboard.ts';
import { until } from '../helpers/poll.ts';
import { spawnSupervisor, type SpawnedSupervisor } from '../helpers/supervisor.ts';
import { launchChromium } from '../helpers/browser.ts';
import { CHROMIUM, skipUnless } from '../helpers/tools.ts';

describe('operator controls in a real browser', { skip: skipUnless(CHROMIUM), timeout: 240_000 }, () => {
  let t: TestDatabase;
  let d: ServedDashboard;
  let browser: Browser;
  let page: Page;
  let supervisor: SpawnedSupervisor | undefined;
  let tasksDir: string;

  before(async () => {
    t = await createTestDatabase();
    // Open (no token), as on a developer's loopback: the login is covered elsewhere.
    d = await serveTestDashboard({ pool: t.pool, auth: false });
    tasksDir = mkdtempSync(path.join(tmpdir(), 'jobvisor-ops-tasks-'));
    writeFileSync(path.join(tasksDir, 'package.json'), '{"type": "module"}\n');
    writeFileSync(path.join(tasksDir, 'ping.js'), 'export default async () => "pong";\n');
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    // Confirmations (pausing asks first) are accepted, as an operator would.
    page.on('dialog', (dialog) => void dialog.accept());
  });
  after(async () => {
    await browser?.close();
    await supervisor?.stop();
    await d?.close();
    await t?.drop();
    rmSync(tasksDir, { recursive: true, force: true });
  });

  const statuses = async (queue: string) =>
    (
      await t.pool.query<{ status: string; started: boolean }>(
        `SELECT status, started_at IS NOT NULL AS started FROM jobvisor.jobs WHERE kind = 'ping' AND queue = $1 ORDER BY id`,
        [queue],
      )
    ).rows;
  const enqueue = async (kind: string, queue: string, n: number) =>
    t.pool.query(`INSERT INTO jobvisor.jobs (kind, queue) SELECT $1, $2 FROM generate_series(1, $3::int)`, [
      kind,
      queue,
      n,
    ]);

  it('pauses a queue from the overview: a real supervisor starts none of its jobs until it is resumed', async () => {
    supervisor = await spawnSupervisor({
      databaseUrl: t.url,
      tasksDir,
      config: { queues: { default: {}, work: { concurrency: 2 } } },
    });
    await enqueue('ping', 'work', 1);
    await until(
      'a job of queue work runs before the pause',
      () => statuses('work'),
      (rows) => rows.every((r) => r.status === 'done'),
      30_000,
    );
    await page.goto(d.url);
    await page.locator('#queues tr', { hasText: 'work' }).getByRole('button', { name: 'Pause' }).click();
    await page.waitForURL(/\?done=paused&queue=work/);
    assert.match(await page.locator('.flash').innerText(), /Paused/);
    assert.match(await page.locator('#queues tr', { hasText: 'work' }).innerText(), /paused/);
    await supervisor.waitForLog(/^queue paused/, 15_000, (line) => line.queue === 'work');

    await t.pool.query(`DELETE FROM jobvisor.jobs`);
    await enqueue('ping', 'work', 5);
    // A job of a queue that is not paused, enqueued after them, runs to done: the
    // supervisor was claiming all along, and still started none of queue work's.
    await enqueue('ping', 'default', 1);
    await until(
      'the canary in queue default is done',
      () => statuses('default'),
      (rows) => rows[0]?.status === 'done',
      30_000,
    );
    assert.deepEqual(
      await statuses('work'),
      Array.from({ length: 5 }, () => ({ status: 'pending', started: false })),
    );

    await page.goto(`${d.url}queues/work`);
    assert.equal(await page.locator('#queue-state').innerText(), 'paused');
    assert.match(await page.locator('#queue-supervisors').innerText(), new RegExp(String(supervisor.pid)));
    await page.getByRole('button', { name: 'Resume' }).click();
    await page.waitForURL(/queues\/work\?done=resumed/);
    assert.equal(await page.locator('#queue-state').innerText(), 'active');
    await until(
      'the five jobs of queue work are done once it is resumed',
      () => statuses('work'),
      (rows) => rows.length === 5 && rows.every((r) => r.status === 'done'),
      30_000,
    );
  });

  it('ticks 3 of 10 dead letters and retries exactly those', async () => {
    // Queue "parked" has no supervisor, so the retried jobs stay pending to be checked.
    const ids = await seedDeadLetters(t.pool, { kind: 'pick', queue: 'parked', count: 10 });
    const chosen = [ids[0], ids[5], ids[9]] as string[];
    await page.goto(`${d.url}jobs?status=failed&kind=pick`);
    const retrySelected = page.getByRole('button', { name: 'Retry selected' });
    assert.equal(await retrySelected.isDisabled(), true, 'nothing ticked yet');
    for (const id of chosen) await page.getByLabel(`Select job ${id}`, { exact: true }).check();
    await retrySelected.click();
    assert.equal(await page.locator('h1').innerText(), 'Retry 3 jobs?');
    await page.getByRole('button', { name: 'Yes, retry them' }).click();
    await page.waitForURL(/done=retried&n=3/);
    const { rows } = await t.pool.query<{ id: string }>(
      `SELECT id FROM jobvisor.jobs WHERE kind = 'pick' AND status = 'pending' ORDER BY id`,
    );
    assert.deepEqual(
      rows.map((r) => r.id),
      chosen,
    );
  });

  it('filters scheduled jobs from the status menu, shown apart from due ones', async () => {
    await t.pool.query(`INSERT INTO jobvisor.jobs (kind, queue, run_at)
      VALUES ('later', 'parked', now() + interval '2 hours'), ('later', 'parked', now() + interval '3 hours'),
             ('later', 'parked', now() - interval '1 minute')`);
    await page.goto(`${d.url}jobs?kind=later`);
    await page.selectOption('select[name=status]', 'scheduled');
    await page.click('button:text("Filter")');
    await page.waitForURL(/status=scheduled/);
    assert.equal(await page.locator('#jobs tbody tr').count(), 2);
    assert.deepEqual(await page.locator('#jobs tbody .status').allInnerTexts(), ['scheduled', 'scheduled']);
  });

  it('shows no Cancel or Run now on a dead letter', async () => {
    const [id] = await seedDeadLetters(t.pool, { kind: 'dead_one', queue: 'parked', count: 1 });
    await page.goto(`${d.url}jobs/${id}`);
    const buttons = await page.locator('.actions button[type=submit]').allInnerTexts();
    assert.deepEqual(
      buttons.map((b) => b.trim()),
      ['Retry', 'Delete'],
    );
  });

  it('applies the dark palette under an emulated dark color scheme', async () => {
    const background = () => page.evaluate<string>('getComputedStyle(document.body).backgroundColor');
    const luminance = (rgb: string) => {
      const [r, g, b] = (rgb.match(/\d+/g) ?? []).map(Number);
      return 0.2126 * (r ?? 0) + 0.7152 * (g ?? 0) + 0.0722 * (b ?? 0);
    };
    await page.emulateMedia({ colorScheme: 'light' });
    await page.goto(d.url);
    const light = await background();
    await page.emulateMedia({ colorScheme: 'dark' });
    const dark = await background();
    assert.ok(luminance(light) > 200, `light background ${light}`);
    assert.ok(luminance(dark) < 40, `dark background ${dark}`);
    const text = await page.evaluate<string>('getComputedStyle(document.body).color');
    assert.ok(luminance(text) > 180, `light text on the dark background: ${text}`);
    await page.emulateMedia({ colorScheme: 'light' });
  });

  it('has no horizontal scroll at 390 px on the overview and the job list', async () => {
    const phone = await browser.newPage({ viewport: { width: 390, height: 844 } });
    try {
      await seedDeadLetters(t.pool, {
        kind: 'a_rather_long_kind_name_for_a_phone',
        queue: 'parked',
        count: 3,
        error: 'Error: connect ECONNREFUSED 10.0.0.12:5432 while sending the monthly statement to the customer',
      });
      for (const where of ['', 'jobs', 'jobs?status=failed']) {
        await phone.goto(`${d.url}${where}`);
        const { scroll, client } = await phone.evaluate<{ scroll: number; client: number }>(
          '({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })',
        );
        assert.ok(scroll <= client, `/${where}: page is ${scroll} px wide in a ${client} px viewport`);
        assert.ok(
          await phone.locator('header a', { hasText: 'Schedules' }).isVisible(),
          `/${where}: navigation visible`,
        );
      }
    } finally {
      await phone.close();
    }
  });

  it('updates the overview in place, without a reload, and not while paused', async () => {
    await page.goto(d.url);
    await page.evaluate('window.stayed = true');
    const before = await page.locator('#queues').innerText();
    await seedDeadLetters(t.pool, { kind: 'live', queue: 'livequeue', count: 2 });
    // Read through the locator, not waitForFunction: the page's CSP (script-src 'self') forbids the eval it needs.
    await until(
      'the live update to show livequeue',
      () => page.locator('#queues').innerText(),
      (text) => text.includes('livequeue'),
      30_000,
      100,
    );
    assert.ok(!before.includes('livequeue'));
    assert.equal(
      await page.evaluate<boolean>('window.stayed === true'),
      true,
      'the same document: updated without a reload',
    );
    // Paused: nothing is fetched any more.
    await page.locator('#refresh-toggle').click();
    assert.equal(await page.locator('#refresh-toggle').innerText(), 'Resume auto-refresh');
    const stamp = await page.locator('[data-refresh]').getAttribute('data-updated');
    let fetched = 0;
    page.on('request', (r) => {
      if (r.url() === d.url) fetched++;
    });
    await seedDeadLetters(t.pool, { kind: 'live', queue: 'quietqueue', count: 1 });
    // Wait through more than one refresh interval (10 s) for a request that must not come.
    await page.waitForTimeout(11_000);
    assert.equal(fetched, 0);
    assert.equal(await page.locator('[data-refresh]').getAttribute('data-updated'), stamp);
    assert.ok(!(await page.locator('#queues').innerText()).includes('quietqueue'));
    await page.locator('#refresh-toggle').click();
  });
});
