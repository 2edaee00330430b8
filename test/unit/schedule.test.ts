/**
 * The test runner's schedule (test/helpers/schedule.ts) with real `node --test`
 * processes: the ordinary files first, side by side; then the paired files two
 * at a time beside nothing else; then the files that run alone. Each fake file
 * records when it started and ended; a paired one waits for its partner to
 * have started, so it fails unless the two really run at once.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runFiles } from '../helpers/schedule.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const dir = mkdtempSync(path.join(tmpdir(), 'jobvisor-schedule-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A test file that logs `<name> start|end <ms>` to log.txt; `partner`: it waits (20 s at most) for that one's start. */
function fakeFile(name: string, partner?: string): string {
  const file = path.join(dir, `${name}.test.mjs`);
  const log = JSON.stringify(path.join(dir, 'log.txt'));
  writeFileSync(
    file,
    `import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { it } from 'node:test';
it(${JSON.stringify(name)}, async () => {
  appendFileSync(${log}, ${JSON.stringify(name)} + ' start ' + Date.now() + '\\n');
  const partner = ${JSON.stringify(partner ?? null)};
  const deadline = Date.now() + 20_000;
  while (partner && !(existsSync(${log}) && readFileSync(${log}, 'utf8').includes(partner + ' start'))) {
    if (Date.now() > deadline) throw new Error(partner + ' never ran beside ' + ${JSON.stringify(name)});
    await new Promise((r) => setTimeout(r, 20));
  }
  appendFileSync(${log}, ${JSON.stringify(name)} + ' end ' + Date.now() + '\\n');
});
`,
  );
  return file;
}

describe('test file schedule', () => {
  it('runs the ordinary files, then the paired ones two at a time, then the lone ones', async () => {
    const files = [
      fakeFile('plain1', 'plain2'),
      fakeFile('plain2', 'plain1'),
      fakeFile('pairA', 'pairB'),
      fakeFile('pairB', 'pairA'),
      fakeFile('lone1'),
      fakeFile('lone2'),
    ];
    const runs = await runFiles({
      node: process.execPath,
      files,
      concurrency: 2,
      alone: (f) => path.basename(f).startsWith('lone'),
      paired: (f) => path.basename(f).startsWith('pair'),
      expected: {},
      // Without the marker this file's own runner sets: the fake files run as npm test's do.
      env: { ...process.env, NODE_TEST_CONTEXT: undefined },
      cwd: root,
      write: () => {},
    });
    assert.deepEqual(
      runs.map((r) => [path.basename(r.file), r.status]).sort(),
      files.map((f) => [path.basename(f), 0]).sort(),
      'every file passed (a paired or plain one fails when its partner never ran beside it)',
    );
    const at: Record<string, number> = {};
    for (const line of readFileSync(path.join(dir, 'log.txt'), 'utf8').trim().split('\n')) {
      const [name, what, ms] = line.split(' ');
      at[`${name} ${what}`] = Number(ms);
    }
    const latest = (...keys: string[]) => Math.max(...keys.map((k) => at[k] as number));
    const earliest = (...keys: string[]) => Math.min(...keys.map((k) => at[k] as number));
    assert.ok(latest('plain1 end', 'plain2 end') <= earliest('pairA start', 'pairB start'), 'pairs after the rest');
    assert.ok(latest('pairA end', 'pairB end') <= earliest('lone1 start', 'lone2 start'), 'lone files after the pairs');
    const [first, second] = ['lone1', 'lone2'].sort(
      (a, b) => (at[`${a} start`] as number) - (at[`${b} start`] as number),
    );
    assert.ok((at[`${first} end`] as number) <= (at[`${second} start`] as number), 'lone files one at a time');
  });
});
