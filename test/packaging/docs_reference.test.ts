/**
 * The docs site's reference cannot drift from the code:
 * - each generated page (scripts/reference-pages.ts) is rendered again from
 *   the code and must equal the committed one (`npm run docs:reference`
 *   rewrites them);
 * - every public export of src/index.ts (the union of the entry points) has a
 *   doc comment;
 * - links of a page that leave docs/ point into the repository;
 * - README.md stays at most 200 lines, with absolute links only (it is the
 *   npm page), each into a file that exists.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fromIncluded, outsideDocs } from '../../scripts/docs-repository-links.ts';
import { committed, REFERENCE_PAGES } from '../../scripts/reference-pages.ts';
import { publicExports } from '../../scripts/undocumented-exports.ts';

describe('generated reference pages', { timeout: 240_000 }, () => {
  for (const page of REFERENCE_PAGES) {
    it(`${page.file} is what the code generates`, async () => {
      const fresh = await page.render();
      const old = committed(page);
      if (fresh === old) return;
      assert.fail(
        `${page.file} is stale: run \`npm run docs:reference\` and commit it.\n${firstDifference(old, fresh)}`,
      );
    });
  }
});

describe('doc comments of the public API', () => {
  it('every export of the entry points (src/index.ts, src/entry/*.ts) has one', () => {
    const exports = publicExports();
    assert.ok(exports.length > 50, `only ${exports.length} exports read from the entry points`);
    const missing = exports.filter((e) => !e.documented).map((e) => e.name);
    assert.deepEqual(
      missing,
      [],
      `exports of the entry points without a doc comment (write one above the declaration): ${missing.join(', ')}`,
    );
  });
});

describe('links that leave docs/', () => {
  it('point into the repository; links inside docs/ and absolute ones are left alone', () => {
    assert.equal(outsideDocs('internals/index.md', '../../BENCHMARKS.md'), 'BENCHMARKS.md');
    assert.equal(outsideDocs('ARCHITECTURE.md', '../src/config/schema.ts#L3'), 'src/config/schema.ts#L3');
    assert.equal(outsideDocs('benchmarks-history.md', '../BENCHMARKS.md'), 'BENCHMARKS.md');
    assert.equal(outsideDocs('internals/index.md', '../ARCHITECTURE.md'), null);
    assert.equal(outsideDocs('index.md', './'), null);
    assert.equal(outsideDocs('guides/index.md', '../'), null);
    assert.equal(outsideDocs('guides/index.md', '..'), null);
    assert.equal(outsideDocs('index.md', '#top'), null);
    assert.equal(outsideDocs('index.md', '/reference/'), null);
    assert.equal(outsideDocs('index.md', 'https://example.com/x.md'), null);
    assert.equal(outsideDocs('index.md', '../../outside.md'), null);
  });

  it('of a file included from outside docs/ are resolved from that file', () => {
    const page = 'internals/benchmarks.md';
    assert.deepEqual(fromIncluded(page, 'BENCHMARKS.md', 'docs/benchmarks-history.md#tracing'), {
      site: '../benchmarks-history.md#tracing',
    });
    assert.deepEqual(fromIncluded(page, 'BENCHMARKS.md', 'bench/peers/README.md'), {
      repository: 'bench/peers/README.md',
    });
    assert.equal(fromIncluded(page, 'BENCHMARKS.md', '#method'), null);
    assert.equal(fromIncluded(page, 'BENCHMARKS.md', '/internals/'), null);
  });
});

describe('README.md, as the npm page shows it', () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

  it('stays short: at most 200 lines, the rest is on the docs site', () => {
    const lines = readme.split('\n').length - (readme.endsWith('\n') ? 1 : 0);
    assert.ok(lines <= 200, `README.md has ${lines} lines: move the detail to a page of docs/`);
  });

  it("links only to absolute URLs, which work from the npm page, and into the package's repository", () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      repository: { url: string };
    };
    const repository = pkg.repository.url.replace(/^git\+/, '').replace(/\.git$/, '');
    const links = [...readme.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] as string);
    assert.ok(links.length >= 10, `only ${links.length} links in README.md`);
    const relative = links.filter((href) => !/^https?:\/\//.test(href));
    assert.deepEqual(relative, [], 'relative links in README.md lead nowhere from the npm page');
    const ours = links.filter((h) => h.startsWith(`${repository}/`));
    assert.ok(ours.length >= 10, `README.md links into ${repository} (package.json's repository) ${ours.length} times`);
    for (const href of ours) {
      const file = /\/(?:blob|tree)\/main\/([^#]+)/.exec(href)?.[1];
      assert.ok(file, `${href}: a link to a file of the repository's main branch`);
      assert.ok(
        existsSync(new URL(`../../${file}`, import.meta.url)),
        `README.md links to ${file}, which is not in the repository`,
      );
    }
  });
});

/** The first line where two texts differ, for the failure message. */
function firstDifference(old: string, fresh: string): string {
  const a = old.split('\n');
  const b = fresh.split('\n');
  const i = a.findIndex((line, n) => line !== b[n]);
  const at = i < 0 ? a.length : i;
  return `first difference at line ${at + 1}:\n  committed: ${a[at] ?? '(end of file)'}\n  generated: ${b[at] ?? '(end of file)'}`;
}
