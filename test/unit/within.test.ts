/**
 * src/within.ts, the one bounded wait of the shutdown paths (supervisor stop,
 * metrics scrape, trace exporter): true when the promise fulfils in time,
 * false when time runs out, the promise's own error when it rejects, and with
 * `unref` a wait that keeps no process alive.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { within } from '../../src/within.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const never = () => new Promise<void>(() => {});

describe('within', () => {
  it('is true when the promise fulfils in time', async () => {
    assert.equal(await within(Promise.resolve('value'), 1000), true);
  });

  it('is false when the time runs out first', async () => {
    const started = performance.now();
    assert.equal(await within(never(), 20), false);
    assert.ok(performance.now() - started >= 19);
  });

  it('waits as long as it takes without a bound', async () => {
    const later = new Promise<void>((resolve) => setTimeout(resolve, 30));
    assert.equal(await within(later, undefined), true);
  });

  it("rejects with the promise's error when it rejects in time", async () => {
    await assert.rejects(within(Promise.reject(new Error('boom')), 1000), /boom/);
  });

  it('keeps no process alive with unref, and does without it', () => {
    const script = (unref: boolean) =>
      `import('./src/within.ts').then((m) => m.within(new Promise(() => {}), 1500, { unref: ${unref} }))` +
      `.then((r) => console.log('settled', r))`;
    const run = (unref: boolean) =>
      spawnSync(process.execPath, ['--import', 'tsx', '-e', script(unref)], { cwd: root, encoding: 'utf8' });
    const unrefd = run(true);
    assert.equal(unrefd.status, 0, unrefd.stderr);
    assert.equal(unrefd.stdout, '', 'the process ended before the bound, without waiting for it');
    const held = run(false);
    assert.equal(held.status, 0, held.stderr);
    assert.equal(held.stdout.trim(), 'settled false', 'the timer held the process until the bound');
  });
});
