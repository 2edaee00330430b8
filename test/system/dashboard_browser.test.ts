/**
 * The dashboard in a real browser (Debian's chromium driven by
 * playwright-core) against a real database and a real supervisor process:
 * the on-call path from the overview to a fixed dead letter, a bulk retry of
 * 1,000, and proof that hostile payloads render inert.
 *
 * JOBVISOR_SCREENSHOTS=1 (npm run screenshots) also writes the dashboard page's (docs/operations/dashboard.md)
 * docs/img/dashboard-overview.png and docs/img/dashboard-job.png, each also
 * in the dark palette (-dark.png).
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { seedDeadLetters, serveTestDashboard, TEST_TOKEN, type ServedDashboard } from '../helpers/dashboard.ts';
import { until } from '../helpers/poll.ts';
import { spawnSupervisor, type SpawnedSupervisor } from '../helpers/supervisor.ts';
import { launchChromium } from '../helpers/browser.ts';
import { CHROMIUM, skipUnless } from '../helpers/tools.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SCREENSHOTS = process.env.JOBVISOR_SCREENSHOTS === '1' ? path.join(root, 'docs/img') : null;
/** The "Log out" button's text colour and the colour behind it (its own, else the nearest ancestor's that is opaque). */
const LOG_OUT_COLORS = `(() => {
  const button = [...document.querySelectorAll('header button')].find((b) => b.textContent.trim() === 'Log out');
  let background = 'rgba(0, 0, 0, 0)';
  for (let el = button; el && /^rgba\\(.*, 0\\)$|^transparent$/.test(background); el = el.parentElement)
    background = getComputedStyle(el).backgroundColor;
  return { color: getComputedStyle(button).color, background };
})()`;

/** WCAG 2 contrast ratio of two opaque CSS rgb() colours (1 to 21). */
function contrast(a: string, b: string): number {
  const luminance = (rgb: string) => {
    const [r, g, bl] = (rgb.match(/\d+(\.\d+)?/g) ?? []).slice(0, 3).map((v) => {
      const c = Number(v) / 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * (r ?? 0) + 0.7152 * (g ?? 0) + 0.0722 * (bl ?? 0);
  };
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}

const XSS = `<script>alert(1)</script>"><img src=x onerror=alert(2)>`;

describe('dashboard in a real browser', { skip: skipUnless(CHROMIUM), timeout: 240_000 }, () => {
  let t: TestDatabase;
  let d: ServedDashboard;
  let browser: Browser;
  let page: Page;
  let supervisor: SpawnedSupervisor | undefined;
  let tasksDir: string;

  before(async () => {
    t = await createTestDatabase();
    d = await serveTestDashboard({ pool: t.pool, basePath: '/ops/jobvisor' });
    tasksDir = mkdtempSync(path.join(tmpdir(), 'jobvisor-dashboard-tasks-'));
    // The "fixed" task: it failed before (the seeded history); now it succeeds.
    writeFileSync(path.join(tasksDir, 'package.json'), '{"type": "module"}\n');
    writeFileSync(path.join(tasksDir, 'invoice_pdf.js'), 'export default async () => "ok";\n');
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  });
  after(async () => {
    await browser?.close();
    await supervisor?.stop();
    await d?.close();
    await t?.drop();
    rmSync(tasksDir, { recursive: true, force: true });
  });

  const stateOf = async (id: string) =>
    (
      await t.pool.query<{ status: string; last_error: string | null }>(
        'SELECT status, last_error FROM jobvisor.jobs WHERE id = $1',
        [id],
      )
    ).rows[0];

  it('takes the on-call path: overview → dead letters of one kind → error history → retry → done', async () => {
    const failing = await seedDeadLetters(t.pool, {
      kind: 'invoice_pdf',
      count: 5,
      attempts: 3,
      error: 'Error: template "invoice" not found\n    at render (tasks/invoice_pdf.js:12:9)',
      payload: { invoice_id: 4211, customer: { id: 97, email: 'ops@example.com', Token: 'tok-live-1234' } },
    });
    await seedDeadLetters(t.pool, { kind: 'welcome_email', count: 2, error: 'Error: SMTP 421 try later' });
    // History for the charts: finished jobs spread over the last day.
    await t.pool.query(`
      INSERT INTO jobvisor.jobs (kind, payload, status, attempts, created_at, started_at, finished_at)
      SELECT 'welcome_email', '{}', 'done', 1, f - interval '1 second', f - interval '1 second', f
        FROM (SELECT now() - (random() * interval '1 day') * (CASE WHEN g % 3 = 0 THEN 0.04 ELSE 1 END) AS f
                FROM generate_series(1, 3000) g) x`);
    supervisor = await spawnSupervisor({ databaseUrl: t.url, tasksDir, config: { queues: { default: {} } } });

    // Log in (the cookie form), landing on the overview.
    await page.goto(d.url);
    assert.match(page.url(), /\/ops\/jobvisor\/login\?next=/);
    await page.fill('input[name=token]', TEST_TOKEN);
    await page.click('button[type=submit]');
    await page.waitForURL(d.url);
    // 1. The overview: per-queue dead letters, the live supervisor.
    const queues = page.locator('#queues');
    await until(
      'the overview shows the live supervisor',
      async () => {
        await page.reload();
        return page.locator('#supervisors tbody').innerText();
      },
      (text) => text.includes(supervisor?.pid.toString() ?? '?'),
    );
    assert.match(await queues.innerText(), /default\s+0\s+0\s+0\s+0\s+7\s/);
    if (SCREENSHOTS) {
      mkdirSync(SCREENSHOTS, { recursive: true });
      await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-overview.png'), fullPage: true });
      await page.emulateMedia({ colorScheme: 'dark' });
      await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-overview-dark.png'), fullPage: true });
      await page.emulateMedia({ colorScheme: 'light' });
    }

    // 2. Dead letters of one kind, through the filter form; the URL keeps the filter.
    await page.click('header >> text=Jobs');
    await page.selectOption('select[name=status]', 'failed');
    await page.fill('input[name=kind]', 'invoice_pdf');
    await page.click('button:text("Filter")');
    await page.waitForURL(/status=failed&queue=&kind=invoice_pdf/);
    assert.equal(await page.locator('#job-count').innerText(), '5');
    assert.equal(await page.locator('#jobs tbody tr').count(), 5);

    // 3. One of them, with its error history.
    const id = failing[0] as string;
    await page.click(`#jobs a:text-is("${id}")`);
    await page.waitForURL(`${d.url}jobs/${id}`);
    const timeline = await page.locator('#timeline').innerText();
    for (const attempt of [1, 2, 3]) assert.ok(timeline.includes(`(attempt ${attempt})`), timeline);
    assert.match(timeline, /created/);
    assert.match(await page.locator('#last-error').innerText(), /template "invoice" not found/);
    const payload = await page.locator('#payload').innerText();
    assert.ok(payload.includes('"Token": "[redacted]"') && !payload.includes('tok-live'), payload);
    if (SCREENSHOTS) {
      await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-job.png'), fullPage: true });
      await page.emulateMedia({ colorScheme: 'dark' });
      await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-job-dark.png'), fullPage: true });
      await page.emulateMedia({ colorScheme: 'light' });
    }

    // 4. Retry it; the real supervisor runs it to done.
    await page.getByRole('button', { name: 'Retry', exact: true }).click();
    await page.waitForURL(`${d.url}jobs/${id}?done=retried`);
    await until(
      'the retried job is done',
      () => stateOf(id),
      (s) => s?.status === 'done',
      30_000,
    );
    await page.reload();
    assert.match(await page.locator('h1').innerText(), /done/);
  });

  it('bulk-retries everything matching a filter of 1,000 dead letters, after a confirmation stating the count', async () => {
    // A queue no supervisor serves, so the retried jobs stay pending to be counted.
    await seedDeadLetters(t.pool, { kind: 'sync_crm', queue: 'parked', count: 1000 });
    await page.goto(`${d.url}jobs?status=failed&kind=sync_crm`);
    assert.equal(await page.locator('#job-count').innerText(), '1,000');
    await page.getByRole('button', { name: 'Retry all matching' }).click();
    assert.match(await page.locator('h1').innerText(), /^Retry 1,000 jobs\?$/);
    await page.getByRole('button', { name: 'Yes, retry them' }).click();
    await page.waitForURL(/done=retried&n=1000/);
    assert.match(await page.locator('.flash').innerText(), /1,000 jobs changed/);
    const { rows } = await t.pool.query(
      `SELECT status, count(*)::int AS n FROM jobvisor.jobs WHERE kind = 'sync_crm' GROUP BY status`,
    );
    assert.deepEqual(rows, [{ status: 'pending', n: 1000 }]);
  });

  it('renders <script> and onerror payloads in kind, payload and error as inert text: no dialog, no request', async () => {
    const [id] = await seedDeadLetters(t.pool, {
      kind: XSS,
      count: 1,
      error: XSS,
      payload: { note: XSS, [XSS]: `'><svg onload=alert(3)>` },
    });
    const dialogs: string[] = [];
    const requests: string[] = [];
    page.on('dialog', (dlg) => {
      dialogs.push(dlg.message());
      void dlg.dismiss();
    });
    page.on('request', (r) => requests.push(r.url()));
    const pages = [
      `jobs/${id}`,
      `jobs?status=failed&kind=${encodeURIComponent(XSS)}`,
      `jobs?q=${encodeURIComponent('onerror')}`,
      'dead-letters',
      '',
    ];
    for (const p of pages) await page.goto(`${d.url}${p}`, { waitUntil: 'load' });
    await page.goto(`${d.url}jobs/${id}`, { waitUntil: 'load' });
    assert.equal(await page.locator('#kind').innerText(), XSS, 'shown as text');
    assert.ok((await page.locator('#payload').innerText()).includes('<svg onload=alert(3)>'));
    assert.equal(await page.locator('img').count(), 0);
    assert.equal(await page.locator('svg[onload]').count(), 0);
    assert.deepEqual(dialogs, []);
    const allowed = new Set([...pages.map((p) => `${d.url}${p}`), `${d.url}static/app.css`, `${d.url}static/app.js`]);
    const unexpected = requests.filter((u) => !allowed.has(decodeURI(u)) && !allowed.has(u));
    assert.deepEqual(unexpected, []);
  });

  it('shows the top bar\'s "Log out" button readable in the light and the dark palette', async () => {
    await page.goto(d.url);
    if (page.url().includes('/login')) {
      await page.fill('input[name=token]', TEST_TOKEN);
      await page.click('button[type=submit]');
      await page.waitForURL(d.url);
    }
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme });
      const { color, background } = await page.evaluate<{ color: string; background: string }>(LOG_OUT_COLORS);
      const ratio = contrast(color, background);
      assert.ok(ratio >= 4.5, `${colorScheme}: "Log out" is ${color} on ${background}, contrast ${ratio.toFixed(2)}:1`);
    }
    await page.emulateMedia({ colorScheme: 'light' });
  });

  it('pauses and resumes auto-refresh', async () => {
    await page.goto(`${d.url}jobs`);
    const toggle = page.locator('#refresh-toggle');
    await toggle.click();
    assert.equal(await toggle.innerText(), 'Resume auto-refresh');
    assert.equal(await page.locator('[data-refresh]').getAttribute('data-paused'), '1');
    await page.reload();
    assert.equal(await page.locator('#refresh-toggle').innerText(), 'Resume auto-refresh', 'kept across reloads');
    await page.locator('#refresh-toggle').click();
    assert.equal(await page.locator('[data-refresh]').getAttribute('data-paused'), '0');
  });
});
