/** Result rows of `jobvisor bench`: one line each on stderr (or JSON on stdout), then a table. */
import { median, spread } from './stats.ts';

export interface Row {
  scenario: string;
  system: string;
  jobs?: number;
  runs: number;
  median: number;
  spread: number;
  unit: string;
  values: number[];
  extra?: Record<string, unknown>;
}

export function makeRow(
  scenario: string,
  system: string,
  unit: string,
  values: number[],
  extra?: Record<string, unknown>,
): Row {
  return { scenario, system, runs: values.length, median: median(values), spread: spread(values), unit, values, extra };
}

/** Decimals shown for a unit: latencies and ratios (×) with two, counts and rates whole. */
const digitsOf = (unit: string): number => (unit === 'ms' || unit === '×' ? 2 : 0);

export function describeRow(row: Row): string {
  const digits = digitsOf(row.unit);
  return `  ${row.scenario} ${row.system}: ${row.median.toFixed(digits)} ${row.unit} (runs ${row.values.map((v) => v.toFixed(digits)).join(', ')})${describeCost(row.extra?.perJob)}\n`;
}

/** The medians of PostgreSQL's per-job cost over a row's runs (src/bench/pg_cost.ts), if it has them. */
function describeCost(perJob: unknown): string {
  if (!Array.isArray(perJob) || perJob.length === 0) return '';
  const costs = perJob as Array<Record<string, number | undefined>>;
  const of = (key: string) => {
    const values = costs.map((c) => c[key]).filter((v): v is number => typeof v === 'number');
    return values.length > 0 ? median(values) : undefined;
  };
  const cpu = of('dbCpuMsPerJob');
  const server = of('serverCpuMsPerJob');
  return (
    `; per job: WAL ${of('walBytesPerJob')} bytes` +
    (cpu === undefined
      ? ''
      : `, PostgreSQL CPU ${(cpu * 1000).toFixed(0)} µs (whole server ${((server ?? 0) * 1000).toFixed(0)} µs)`)
  );
}

/**
 * The table: each scenario's rows with their ratio to the scenario's first
 * row (jobvisor's), as "how many times better the first row is" (throughput
 * divided, latency inverted); rows that are ratios (×) get none.
 */
export function formatTable(rows: Row[]): string {
  const base = new Map<string, Row>();
  for (const r of rows) if (!base.has(r.scenario)) base.set(r.scenario, r);
  const lines = [['scenario', 'system', 'median', 'unit', 'spread', 'first row ÷ this']];
  for (const r of rows) {
    const b = base.get(r.scenario);
    const higherIsBetter = r.unit === 'jobs/s';
    // Rows that are ratios themselves (×) are not compared with each other.
    const compared = b && b !== r && r.unit !== '×';
    const ratio = compared ? (higherIsBetter ? b.median / r.median : r.median / b.median) : undefined;
    lines.push([
      r.scenario,
      r.system,
      r.median.toFixed(digitsOf(r.unit)),
      r.unit,
      `${(r.spread * 100).toFixed(0)} %`,
      ratio === undefined ? '' : `${ratio.toFixed(2)}x`,
    ]);
  }
  const widths = lines[0]!.map((_, i) => Math.max(...lines.map((l) => (l[i] ?? '').length)));
  return (
    lines
      .map((l) =>
        l
          .map((c, i) => c.padEnd(widths[i] ?? 0))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') +
    "\nratio: how many times better the scenario's first row is than that row (throughput ÷, latency ÷ inverted)\n"
  );
}

/** One system's side of a scenario: measure() gives one run's figure. */
export interface Variant {
  system: string;
  measure: () => Promise<number>;
  extra?: Record<string, unknown>;
}

/** Runs a scenario's variants round-robin (run 1 of each, then run 2, …) and emits their rows. */
export type RoundRobin = (scenario: string, unit: string, variants: Variant[]) => Promise<void>;
