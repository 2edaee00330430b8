/**
 * `npm run docs:reference`: renders the reference pages of the docs site from
 * the code (scripts/reference-pages.ts) and writes those that changed.
 * `--check` writes nothing and exits 1 naming the stale pages.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { committed, REFERENCE_PAGES } from './reference-pages.ts';
import { ROOT } from './ts-program.ts';

const check = process.argv.includes('--check');
let stale = 0;
for (const page of REFERENCE_PAGES) {
  const text = await page.render();
  if (text === committed(page)) continue;
  stale++;
  if (check) process.stdout.write(`${page.file} is stale: run npm run docs:reference\n`);
  else {
    writeFileSync(path.join(ROOT, page.file), text);
    process.stdout.write(`${page.file} rewritten\n`);
  }
}
if (stale === 0) process.stdout.write('reference pages are up to date\n');
process.exitCode = check && stale > 0 ? 1 : 0;
