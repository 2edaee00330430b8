/**
 * The per-file duration report every test run writes (test/run.ts):
 * .test-report/durations.json, git-ignored. It says how long each file's
 * process took (wall clock, so files that ran side by side share the
 * machine) and the CPU its processes used, how the run was made (concurrency, load average) and in all; the
 * next run reads it back to start the slowest files first. A run on another
 * Node.js (`--node 22`) writes durations-node22.json, so that two such runs
 * side by side (.ci/run) keep a report each.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FileRun } from './schedule.ts';

export interface DurationReport {
  finishedAt: string;
  node: string;
  concurrency: number;
  /** How many files could run at once while the CPUs sat idle, and the most that did. */
  maxConcurrency: number;
  peak: number;
  /** os.loadavg() when the run started and when it ended (1, 5 and 15 minutes). */
  loadStart: number[];
  loadEnd: number[];
  /** How busy every core of the machine was over the run (0–1; every process, PostgreSQL's too), where /proc/stat tells. */
  machineBusy: number | undefined;
  wallMs: number;
  /** Slowest first. */
  files: FileRun[];
}

/** The report's path under the repository root: `durations.json`, or `durations-<name>.json`. */
export function reportPath(root: string, name = ''): string {
  return path.join(root, '.test-report', name ? `durations-${name}.json` : 'durations.json');
}

/**
 * Milliseconds per file from the last report, merged over earlier ones of
 * other files (a run of one tier must not forget the others' costs), over
 * test/durations.seed.json: a clean clone's first run (CI's) then also starts
 * the slowest files first. The seed is a CI run's report, refreshed by hand
 * (`npm run test:seed`); a file it does not know starts first.
 */
export function lastDurations(root: string): Record<string, number> {
  return {
    ...readObject(path.join(root, 'test', 'durations.seed.json')),
    ...readObject(path.join(root, '.test-report', 'expected.json')),
  };
}

function readObject(file: string): Record<string, number> {
  try {
    const report = JSON.parse(readFileSync(file, 'utf8')) as unknown;
    return typeof report === 'object' && report !== null ? (report as Record<string, number>) : {};
  } catch {
    return {};
  }
}

/** Writes this run's report, updates the expected costs, and returns the report. */
export function writeReport(root: string, report: DurationReport, name = ''): DurationReport {
  const files = [...report.files].sort((a, b) => b.ms - a.ms);
  const full: DurationReport = { ...report, files };
  mkdirSync(path.join(root, '.test-report'), { recursive: true });
  writeFileSync(reportPath(root, name), `${JSON.stringify(full, null, 2)}\n`);
  const expected = { ...lastDurations(root), ...Object.fromEntries(files.map((f) => [f.file, f.ms])) };
  writeFileSync(path.join(root, '.test-report', 'expected.json'), `${JSON.stringify(expected, null, 2)}\n`);
  return full;
}

/** The closing lines: the ten slowest files, the total, failures, where the report is. */
export function summary(root: string, report: DurationReport, name = ''): string {
  const s = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
  const cpu = report.files.every((f) => f.cpuMs !== undefined)
    ? report.files.reduce((sum, f) => sum + (f.cpuMs ?? 0), 0)
    : undefined;
  const width = Math.max(...report.files.slice(0, 10).map((f) => f.file.length), 0);
  const lines = [
    '',
    'slowest test files:',
    ...report.files
      .slice(0, 10)
      .map(
        (f) =>
          `  ${s(f.ms).padStart(8)}  ${f.file.padEnd(width)}${f.cpuMs === undefined ? '' : `  (CPU ${s(f.cpuMs)})`}`,
      ),
    `${report.files.length} files in ${s(report.wallMs)}${cpu === undefined ? '' : `, CPU ${s(cpu)} in their processes`} (concurrency ${report.concurrency}, up to ${report.maxConcurrency} while CPUs sat idle, at most ${report.peak} at once; load ${report.loadStart.map((l) => l.toFixed(1)).join(' ')} → ${report.loadEnd.map((l) => l.toFixed(1)).join(' ')}${report.machineBusy === undefined ? '' : `; CPUs ${Math.round(report.machineBusy * 100)} % busy`}); report: ${path.relative(root, reportPath(root, name))}`,
  ];
  const failed = report.files.filter((f) => f.status !== 0);
  if (failed.length > 0) {
    lines.push(`failed: ${failed.map((f) => f.file).join(' ')}`);
    for (const f of failed)
      lines.push(`why ${f.file} failed:`, ...(f.failures ?? '?').split('\n').map((l) => `  ${l}`));
  }
  return `${lines.join('\n')}\n`;
}

/** os.loadavg(), rounded. */
export function load(): number[] {
  return os.loadavg().map((l) => Math.round(l * 100) / 100);
}
