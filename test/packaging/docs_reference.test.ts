/**
 * The docs site's reference cannot drift from the code:
 * - each generated page (scripts/reference-pages.ts) is rendered again from
 *   the code and must equal the committed one (`npm run docs:reference`
 *   rewrites them);
 * - every public export of src/index.ts (the union of the entry points) has a
 *   doc comment;
 * - links of a page that leave docs/ point into the repository.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { outsideDocs } from '../../scripts/docs-repository-links.ts';
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
  it('every export of src/index.ts has one', () => {
    const exports = publicExports();
    assert.ok(exports.length > 50, `only ${exports.length} exports read from src/index.ts`);
    const missing = exports.filter((e) => !e.documented).map((e) => e.name);
    assert.deepEqual(
      missing,
      [],
      `exports of src/index.ts without a doc comment (write one above the declaration): ${missing.join(', ')}`,
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
});

/** The first line where two texts differ, for the failure message. */
function firstDifference(old: string, fresh: string): string {
  const a = old.split('\n');
  const b = fresh.split('\n');
  const i = a.findIndex((line, n) => line !== b[n]);
  const at = i < 0 ? a.length : i;
  return `first difference at line ${at + 1}:\n  committed: ${a[at] ?? '(end of file)'}\n  generated: ${b[at] ?? '(end of file)'}`;
}
