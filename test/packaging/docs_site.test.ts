/**
 * The docs site as a reader gets it: built once by VitePress (the build itself
 * fails on a dead link between pages), served by a plain static server, and
 * opened in a real browser (Debian's chromium driven by playwright-core): the
 * home page leads to the getting-started page, the local search finds
 * "retry", and every internal link of every page reachable from the home page
 * leads to a page that exists and, with a #fragment, to an element of that id.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createReadStream, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../helpers/browser.ts';
import { ROOT } from '../helpers/doc_samples.ts';
import { CHROMIUM, skipUnless } from '../helpers/tools.ts';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.json': 'application/json',
};

describe('docs site in a real browser', { skip: skipUnless(CHROMIUM), timeout: 300_000 }, () => {
  const out = mkdtempSync(path.join(tmpdir(), 'jobvisor-docs-site-'));
  let server: Server;
  let base: string;
  let browser: Browser;
  let page: Page;

  before(async () => {
    const started = Date.now();
    // The browser starts while VitePress builds.
    const [build, launched] = await Promise.all([
      run(process.execPath, [
        path.join(ROOT, 'node_modules/vitepress/bin/vitepress.js'),
        'build',
        'docs',
        '--outDir',
        out,
      ]),
      launchChromium(),
    ]);
    browser = launched;
    assert.equal(build.code, 0, `npm run docs:build failed:\n${build.output}`);
    process.stdout.write(`# docs site built in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
    server = serveStatic(out);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  });
  after(async () => {
    await browser?.close();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    rmSync(out, { recursive: true, force: true });
  });

  it('leads from the home page to the getting-started page', async () => {
    await page.goto(`${base}/`);
    await page.getByRole('link', { name: 'Your first job in five minutes' }).first().click();
    await page.waitForURL(`${base}/getting-started/`);
    // The URL changes before the client-side router has drawn the new page: wait for its heading.
    const heading = page
      .locator('h1')
      .filter({ hasText: /^Your first job in five minutes/ })
      .first();
    await heading.waitFor({ timeout: 15_000 });
    assert.match(await heading.innerText(), /^Your first job in five minutes/);
    assert.ok(
      await page.locator('code', { hasText: 'npx jobvisor migrate' }).count(),
      'no migrate command on the page',
    );
  });

  it('finds "retry" with the local search and opens a result about it', async () => {
    await page.goto(`${base}/`);
    await page.locator('.VPNavBarSearch button').click();
    await page.locator('#localsearch-input').fill('retry');
    const results = page.locator('.VPLocalSearchBox .results .result');
    await results.first().waitFor({ timeout: 15_000 });
    assert.ok((await results.count()) >= 3, `only ${await results.count()} results for "retry"`);
    await results.first().click();
    await page.waitForURL((url) => !url.pathname.endsWith('/') || url.hash !== '', { timeout: 15_000 });
    assert.match(await page.locator('.VPDoc').innerText(), /retr(y|ies)/i);
  });

  it('has no broken internal link: every page, image and #fragment a link names exists', async () => {
    const origin = new URL(base).origin;
    const pages = new Map<string, { status: number; ids: Set<string> }>();
    const links: Array<{ from: string; to: string }> = [];
    const seen = new Set(['/']);
    /** Opens `at` in `tab`, records its ids and links; the pages it links to not seen yet. */
    const visit = async (tab: Page, at: string): Promise<string[]> => {
      const response = await tab.goto(`${base}${at}`);
      const status = response?.status() ?? 0;
      // A string, evaluated in the page (the tests' type-check has no DOM types).
      const found = await tab.evaluate<{ ids: string[]; hrefs: string[]; images: string[] }>(`({
        ids: [...document.querySelectorAll('[id]')].map((e) => e.id),
        hrefs: [...document.querySelectorAll('a[href]')].map((a) => a.href),
        images: [...document.querySelectorAll('img[src]')].map((i) => i.src),
      })`);
      pages.set(at, { status, ids: new Set(found.ids) });
      const next: string[] = [];
      if (status !== 200) return next;
      for (const href of [...found.hrefs, ...found.images]) {
        const url = new URL(href);
        if (url.origin !== origin) continue;
        links.push({ from: at, to: url.pathname + url.hash });
        if (found.images.includes(href)) {
          const image = await tab.request.get(url.href);
          pages.set(url.pathname, { status: image.status(), ids: new Set() });
          seen.add(url.pathname);
        } else if (!seen.has(url.pathname)) {
          seen.add(url.pathname);
          next.push(url.pathname);
        }
      }
      return next;
    };
    // The pages as served, without their scripts: VitePress renders every page whole on the
    // server (nav, sidebar, content with its heading anchors, prev/next), so the links and ids
    // are all in the HTML, and a page costs no hydration (with it, one tab took 30 s of a loaded
    // machine for the ~40 pages). Breadth first, each level shared among a few tabs.
    const context = await browser.newContext({ javaScriptEnabled: false });
    const tabs = await Promise.all([1, 2, 3].map(() => context.newPage()));
    for (let level = ['/']; level.length > 0;) {
      const todo = [...level];
      const found = await Promise.all(
        tabs.map(async (tab) => {
          const next: string[] = [];
          for (let at = todo.shift(); at !== undefined; at = todo.shift()) next.push(...(await visit(tab, at)));
          return next;
        }),
      );
      level = found.flat();
    }
    await context.close();
    assert.ok(pages.size >= 10, `only ${pages.size} pages reached from the home page`);
    const broken = links.filter(({ to }) => {
      const [pathname = '', fragment] = to.split('#');
      const target = pages.get(pathname);
      if (!target || target.status !== 200) return true;
      return fragment !== undefined && fragment !== '' && !target.ids.has(decodeURIComponent(fragment));
    });
    const unique = [...new Set(broken.map((b) => `${b.from} → ${b.to}`))];
    assert.deepEqual(unique, [], `broken internal links:\n${unique.join('\n')}`);
  });
});

/** Files of `root` by URL path, as a static host serves a VitePress site; 404 for anything else. */
function serveStatic(root: string): Server {
  return createServer((req, res) => {
    const pathname = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    const file = path.join(root, pathname.endsWith('/') ? `${pathname}index.html` : pathname);
    if (!file.startsWith(root) || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream' });
    createReadStream(file).pipe(res);
  });
}

function run(command: string, args: string[]): Promise<{ code: number | null; output: string }> {
  const child = spawn(command, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, output })));
}
