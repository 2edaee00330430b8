/**
 * Workflows on the dashboard, over real HTTP and in a real browser, against a
 * real database: the job page's parents and dependents (linked, coloured by
 * status), the workflow graph page (an SVG drawn on the server, one linked box
 * per job, edges parent → child, columns by depth; counts and a note for big
 * workflows; escaping), and `blocked` on the overview and in the job list.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { serveTestDashboard, TEST_TOKEN, type ServedDashboard } from '../helpers/dashboard.ts';
import { launchChromium } from '../helpers/browser.ts';
import { CHROMIUM, skipUnless } from '../helpers/tools.ts';
import { fanIn, insertWorkflow } from '../helpers/workflow.ts';

const XSS = `<script>alert(1)</script>"><img src=x onerror=alert(2)>`;
const bearer = { authorization: `Bearer ${TEST_TOKEN}` };

let t: TestDatabase;
let d: ServedDashboard;
/** 20 render_page parents (two running, one failed) → merge_pdf → email_pdf. */
let ids: string[];

before(async () => {
  t = await createTestDatabase('dashboard_workflow');
  d = await serveTestDashboard({ pool: t.pool, basePath: '/ops/jobvisor' });
  const nodes = fanIn(20);
  nodes[3] = { ...nodes[3]!, status: 'running' };
  nodes[7] = { ...nodes[7]!, status: 'running' };
  nodes[11] = { ...nodes[11]!, status: 'failed' };
  ids = await insertWorkflow(t.pool, nodes);
});
after(async () => {
  await d?.close();
  await t?.drop();
});

async function page(p: string): Promise<{ status: number; html: string }> {
  const res = await fetch(`${d.url}${p}`, { headers: bearer });
  return { status: res.status, html: await res.text() };
}

/** The boxes of the graph: job id → the x and y of its rect. */
function boxes(html: string): Map<string, { x: number; y: number; cls: string }> {
  const out = new Map<string, { x: number; y: number; cls: string }>();
  const re = /data-job="(\d+)"[\s\S]*?<rect\s+class="([^"]+)"\s+x="([\d.]+)"\s+y="([\d.]+)"/g;
  for (const m of html.matchAll(re)) out.set(m[1]!, { cls: m[2]!, x: Number(m[3]), y: Number(m[4]) });
  return out;
}

describe('the job page', () => {
  it("lists the fan-in job's parents and dependent, each linked and coloured, and links the graph", async () => {
    const merge = ids[20]!;
    const { status, html } = await page(`jobs/${merge}`);
    assert.equal(status, 200);
    const parents = html.slice(html.indexOf('id="parents"'), html.indexOf('id="dependents"'));
    for (const id of ids.slice(0, 20)) assert.ok(parents.includes(`href="/ops/jobvisor/jobs/${id}"`), `parent ${id}`);
    // Unfinished first: the running and failed parents lead the table.
    const order = [...parents.matchAll(/href="\/ops\/jobvisor\/jobs\/(\d+)"/g)].map((m) => m[1]);
    assert.deepEqual(order.slice(0, 3), [ids[3], ids[7], ids[11]]);
    assert.match(parents, /class="status status-running">running</);
    assert.match(parents, /class="status status-failed">failed</);
    assert.match(html, /Parents: 20/);
    const dependents = html.slice(html.indexOf('id="dependents"'));
    assert.match(dependents, new RegExp(`href="/ops/jobvisor/jobs/${ids[21]}"`));
    assert.match(dependents, /class="status status-blocked">blocked</);
    assert.match(html, new RegExp(`href="/ops/jobvisor/jobs/${merge}/workflow" id="workflow-link"`));
  });

  it('has no workflow section for a job outside any workflow', async () => {
    const [solo] = await insertWorkflow(t.pool, [{ kind: 'solo' }]);
    const { status, html } = await page(`jobs/${solo}`);
    assert.equal(status, 200);
    assert.doesNotMatch(html, /id="workflow-link"|id="parents"/);
  });
});

describe('the workflow graph page', () => {
  it('draws 20 → 1 → 1 job by job: linked boxes, status colours, edges, the fan-in one column right', async () => {
    const { status, html } = await page(`jobs/${ids[0]}/workflow`);
    assert.equal(status, 200);
    const b = boxes(html);
    assert.deepEqual([...b.keys()].sort(), [...ids].sort());
    for (const id of ids) assert.match(html, new RegExp(`<a href="/ops/jobvisor/jobs/${id}" class="node"`));
    assert.equal([...html.matchAll(/<path class="edge"/g)].length, 21);
    const [merge, email] = [b.get(ids[20]!)!, b.get(ids[21]!)!];
    const parentX = new Set(ids.slice(0, 20).map((id) => b.get(id)!.x));
    assert.equal(parentX.size, 1, 'the parents share a column');
    assert.ok(merge.x > [...parentX][0]! && email.x > merge.x, 'depth grows to the right');
    const ys = ids.slice(0, 20).map((id) => b.get(id)!.y);
    assert.equal(new Set(ys).size, 20, 'no two parents on one row');
    assert.ok(merge.y > Math.min(...ys) && merge.y < Math.max(...ys), 'the fan-in is centred against its parents');
    assert.match(b.get(ids[11]!)!.cls, /^n-failed/);
    assert.match(merge.cls, /^n-blocked/);
    assert.match(b.get(ids[0]!)!.cls, /root/, 'the job asked about is marked');
    assert.match(html, /22 jobs, 21 dependencies, depth 2/);
    assert.doesNotMatch(html, /id="workflow-collapsed"|id="workflow-truncated"/);
  });

  it('counts a big column in one box and says so; past 2,000 jobs says the workflow was read in part', async () => {
    const big = await insertWorkflow(t.pool, fanIn(2100));
    const { status, html } = await page(`jobs/${big[2100]}/workflow`);
    assert.equal(status, 200);
    assert.match(html, /id="workflow-collapsed"/);
    assert.match(html, /id="workflow-truncated"/);
    assert.match(html, /2,000\+ jobs/);
    // The fan-in and the nearest 1,999 of its parents (or 1,998 and the e-mail job).
    const counted = /render_page ×(1,99[89])/.exec(html)?.[1];
    assert.ok(counted, 'the parents read, counted in one box');
    assert.ok(boxes(html).has(big[2100]!), 'the fan-in itself is drawn and linked');
    assert.match(
      html,
      new RegExp(`class="edge-count"[^>]*>\\s*${counted}\\s*<`),
      'one edge standing for all of theirs',
    );
    assert.ok(html.length < 200_000, `a bounded page: ${html.length} bytes`);
  });

  it('escapes what it draws, answers 404 for a missing or malformed id, and needs credentials', async () => {
    const evil = await insertWorkflow(t.pool, [{ kind: XSS }, { kind: 'child', parents: [0] }]);
    const { html } = await page(`jobs/${evil[1]}/workflow`);
    assert.ok(!html.includes('<script>alert') && !html.includes('<img src=x'), 'the kind is text');
    assert.equal((await page('jobs/424242424/workflow')).status, 404);
    assert.equal((await page('jobs/1%20OR%201=1/workflow')).status, 404);
    const anonymous = await fetch(`${d.url}jobs/${ids[0]}/workflow`, { redirect: 'manual' });
    assert.equal(anonymous.status, 303);
  });
});

describe('blocked on the overview and in the job list', () => {
  it('counts blocked jobs per queue, linked to the filtered list, which lists them alone', async () => {
    const blockedNow = (
      await t.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status = 'blocked'`)
    ).rows[0]!.n;
    const { html } = await page('');
    assert.match(html, /<th class="num" title="waiting for their parents">Blocked<\/th>/);
    assert.match(
      html,
      new RegExp(
        `<a href="/ops/jobvisor/jobs\\?queue=default&amp;status=blocked">${blockedNow.toLocaleString('en-US')}</a>`,
      ),
    );
    const list = await page('jobs?status=blocked');
    assert.equal(list.status, 200);
    const statuses = [...list.html.matchAll(/class="status status-(\w+)"/g)].map((m) => m[1]);
    assert.ok(statuses.length > 0 && statuses.every((s) => s === 'blocked'), statuses.join(','));
    assert.match(list.html, /<option value="blocked" selected>blocked<\/option>/);
  });
});

describe('the graph in a real browser', { skip: skipUnless(CHROMIUM), timeout: 120_000 }, () => {
  let browser: Browser;
  before(async () => {
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
  });

  it('renders the boxes apart from one another, and a click on a box opens that job', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, extraHTTPHeaders: bearer });
    const p = await context.newPage();
    const errors: string[] = [];
    p.on('console', (m) => {
      if (m.type() === 'error' && !m.location().url.endsWith('/favicon.ico')) errors.push(m.text());
    });
    p.on('response', (r) => {
      if (r.status() >= 400 && !r.url().endsWith('/favicon.ico')) errors.push(`${r.status()} ${r.url()}`);
    });
    await p.goto(`${d.url}jobs/${ids[20]}/workflow`);
    // Evaluated as text in the page (the tests are type-checked without the DOM's types).
    const rects = await p.evaluate<Array<{ x: number; y: number; w: number; h: number; fill: string }>>(
      `[...document.querySelectorAll('#workflow-graph a.node rect')].map((e) => {
         const r = e.getBoundingClientRect();
         return { x: r.x, y: r.y, w: r.width, h: r.height, fill: getComputedStyle(e).fill };
       })`,
    );
    assert.equal(rects.length, 22);
    for (let i = 0; i < rects.length; i++)
      for (let j = i + 1; j < rects.length; j++) {
        const [a, b] = [rects[i]!, rects[j]!];
        const apart = a.x + a.w <= b.x || b.x + b.w <= a.x || a.y + a.h <= b.y || b.y + b.h <= a.y;
        assert.ok(apart, `boxes ${i} and ${j} overlap`);
      }
    assert.ok(
      rects.every((r) => r.w >= 150 && r.h >= 40),
      'drawn at full size, not shrunk to fit',
    );
    assert.ok(new Set(rects.map((r) => r.fill)).size >= 4, 'done, running, failed and blocked differ in colour');
    if (process.env.JOBVISOR_SCREENSHOTS === '1') {
      const dir = path.resolve(import.meta.dirname, '../../docs/img');
      mkdirSync(dir, { recursive: true });
      await p.screenshot({ path: path.join(dir, 'dashboard-workflow.png'), fullPage: true });
    }
    await Promise.all([p.waitForURL(`**/jobs/${ids[21]}`), p.click(`#workflow-graph a[data-job="${ids[21]}"]`)]);
    assert.match((await p.textContent('h1')) ?? '', new RegExp(`Job ${ids[21]}`));
    assert.deepEqual(errors, [], 'no console error (the CSP allowed everything the page uses)');
    await context.close();
  });
});
