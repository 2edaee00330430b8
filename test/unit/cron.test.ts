/**
 * Cron expressions have 5 fields or 6 (seconds first), or are an `@` name.
 * cron-parser alone takes 1 to 6 fields and fills the missing ones from the
 * left, so `*\/5 * * *` (4) ran every minute of hours 0, 5, 10, 15 and 20. Every
 * way in refuses other counts naming the count: a config file, run()'s
 * options, the scheduler's and the dashboard's parse.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config/index.ts';
import { parseCron } from '../../src/config/cron.ts';
import { ConfigError, run } from '../../src/index.ts';
import { nextFireTimes } from '../../src/queue/admin/schedules.ts';
import { fireTimes } from '../../src/supervisor/loops/scheduler.ts';

const schedule = (cron: string) => ({ name: 'every-5', cron, kind: 'report' });
const emptyDir = mkdtempSync(path.join(tmpdir(), 'jobvisor-cron-'));

describe('cron expressions', () => {
  it('a config file with a 4-field cron stops loading, naming the schedule and the count', () => {
    const file = path.join(emptyDir, 'four.json');
    writeFileSync(file, JSON.stringify({ schedules: [schedule('*/5 * * *')] }));
    assert.throws(
      () => loadConfig({ configDir: emptyDir, env: { JOBVISOR_CONFIG: file } }),
      (err: Error) =>
        err instanceof ConfigError &&
        /schedules\[0\]\.cron "\*\/5 \* \* \*" has 4 fields: a cron expression has 5 .* or 6/.test(err.message),
    );
  });

  it('refuses 1 to 4 and 7 fields, and an empty or unknown @ name; takes 5, 6 and @daily', () => {
    for (const [cron, count] of [
      ['*', 1],
      ['0 2', 2],
      ['0 2 *', 3],
      ['0 2 * *', 4],
      ['0 0 2 * * * 2026', 7],
    ] as const) {
      assert.throws(
        () => loadConfig({ configDir: emptyDir, env: {}, overrides: { schedules: [schedule(cron)] } }),
        new RegExp(`has ${count} fields?:`),
        cron,
      );
    }
    assert.throws(() => parseCron('   '), /has 0 fields/);
    assert.throws(() => parseCron('@reboot'), /@reboot is not one of the @ names/);
    for (const cron of ['0 2 * * *', '*/5 * * * * *', '@daily', ' 0 2 * * * '])
      assert.equal(
        loadConfig({ configDir: emptyDir, env: {}, overrides: { schedules: [schedule(cron)] } }).schedules[0]?.cron,
        cron,
      );
  });

  it('run() rejects a 4-field cron before it connects anywhere', { timeout: 10_000 }, async () => {
    // Port 1: nothing listens, so only the options check can end this call.
    await assert.rejects(
      run({ connectionString: 'postgres://nobody@127.0.0.1:1/none', schedules: [schedule('*/5 * * *')] }),
      (err: Error) => err instanceof ConfigError && /"\*\/5 \* \* \*" has 4 fields/.test(err.message),
    );
  });

  it('the scheduler and the dashboard read a 5-field cron as minutes, and refuse a 4-field one', () => {
    const from = new Date('2026-01-01T00:00:00Z');
    const to = new Date('2026-01-01T01:00:00Z');
    const base = { name: 's', kind: 'k', payload: {}, queue: 'default', priority: 0, timezone: null };
    assert.equal(fireTimes({ ...base, cron: '*/5 * * * *' }, from, to).length, 12);
    assert.throws(() => fireTimes({ ...base, cron: '*/5 * * *' }, from, to), /has 4 fields/);
    assert.deepEqual(nextFireTimes({ cron: '0 2 * * *', timezone: null }, from, 1), [new Date('2026-01-01T02:00:00Z')]);
    assert.throws(() => nextFireTimes({ cron: '0 2 * *', timezone: null }, from, 1), /has 4 fields/);
  });
});
