/**
 * bench/admin.ts keeps working: one tiny run on the test server reports a
 * finite, positive p50 and p95 for every query, and drops its database.
 * Speed is not asserted (BENCHMARKS.md reports it).
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { adminQuery } from '../helpers/db.ts';
import { runProcess } from '../helpers/cli.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function benchAdmin(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runProcess(process.execPath, ['--import', 'tsx', path.join(root, 'bench/admin.ts'), ...args], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: process.env.JOBVISOR_TEST_DATABASE_URL },
  });
}

describe('bench/admin.ts', () => {
  it('measures every admin read on a tiny table and cleans up', async () => {
    const r = await benchAdmin(['--json', '--done', '300', '--pending', '50', '--dead', '20', '--samples', '2']);
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { results: Array<{ name: string; p50: number; p95: number }> };
    assert.ok(out.results.length >= 15, r.stdout);
    for (const x of out.results) {
      assert.ok(Number.isFinite(x.p50) && x.p50 > 0 && x.p95 >= x.p50, JSON.stringify(x));
    }
    assert.ok(out.results.some((x) => x.name === 'overview()'));
    const left = await adminQuery(`SELECT datname FROM pg_database WHERE datname LIKE 'jobvisor_bench_admin_%'`);
    assert.ok(
      !left.rows.some((row: { datname: string }) => r.stderr.includes(row.datname)),
      'its database was dropped',
    );
  });
});
