/**
 * The history scenario's verdict and growth curve: each figure's ratio to the
 * empty history, and two least-squares fits over the non-empty depths,
 * value = a + b·log10(D) and value = a + b·D, each extrapolated to a depth
 * the bench does not fill (100 M by default). Pure.
 */
import { makeRow, type Row } from './report.ts';

/** The question the scenario answers: does each figure stay within this factor of the empty history's? */
export const HISTORY_TARGET = 1.2;
export const EXTRAPOLATE_TO = 100_000_000;

export interface Line {
  intercept: number;
  slope: number;
}

/** The least-squares line through (xs, ys); undefined unless at least two distinct xs. */
export function leastSquares(xs: number[], ys: number[]): Line | undefined {
  const n = xs.length;
  if (n < 2 || n !== ys.length) return undefined;
  const mx = xs.reduce((s, x) => s + x, 0) / n;
  const my = ys.reduce((s, y) => s + y, 0) / n;
  let sxx = 0;
  let sxy = 0;
  for (let i = 0; i < n; i++) {
    sxx += ((xs[i] as number) - mx) ** 2;
    sxy += ((xs[i] as number) - mx) * ((ys[i] as number) - my);
  }
  if (!(sxx > 0)) return undefined;
  const slope = sxy / sxx;
  return { intercept: my - slope * mx, slope };
}

export const FITS = {
  log: { label: 'a + b·log10(D)', x: (depth: number) => Math.log10(depth) },
  linear: { label: 'a + b·D', x: (depth: number) => depth },
} as const;

export interface Extrapolation {
  fit: keyof typeof FITS;
  line: Line;
  depth: number;
  value: number;
}

/** Both fits through the points of depth > 0, and what they predict at `to`. */
export function extrapolate(points: Array<{ depth: number; value: number }>, to = EXTRAPOLATE_TO): Extrapolation[] {
  const used = points.filter((p) => p.depth > 0 && Number.isFinite(p.value));
  return (Object.keys(FITS) as Array<keyof typeof FITS>).flatMap((fit) => {
    const { x } = FITS[fit];
    const line = leastSquares(
      used.map((p) => x(p.depth)),
      used.map((p) => p.value),
    );
    return line ? [{ fit, line, depth: to, value: line.intercept + line.slope * x(to) }] : [];
  });
}

/** How many times worse than the empty history: latencies D ÷ 0, throughput 0 ÷ D. */
export function ratioToEmpty(value: number, empty: number, unit: string): number {
  return unit === 'jobs/s' ? empty / value : value / empty;
}

/** 5000000 → "5M", 2000 → "2k", 1234 → "1234". */
export function depthLabel(depth: number): string {
  if (depth >= 1_000_000 && depth % 100_000 === 0) return `${depth / 1_000_000}M`;
  if (depth >= 1000 && depth % 100 === 0) return `${depth / 1000}k`;
  return String(depth);
}

export function depthSystem(depth: number): string {
  return `jobvisor ${depthLabel(depth)} done`;
}

/** The extrapolated rows of one operation, as the report prints them (the ratio column gives the predicted ratio). */
export function extrapolatedRows(scenario: string, unit: string, measured: Row[]): Row[] {
  const empty = measured.find((r) => r.extra?.depth === 0)?.median ?? Number.NaN;
  const points = measured.map((r) => ({ depth: r.extra?.depth as number, value: r.median }));
  return extrapolate(points).map((e) =>
    makeRow(scenario, `${depthSystem(e.depth)} (fit ${FITS[e.fit].label})`, unit, [e.value], {
      depth: e.depth,
      extrapolated: true,
      fit: FITS[e.fit].label,
      intercept: e.line.intercept,
      slope: e.line.slope,
      from: points.filter((p) => p.depth > 0).map((p) => p.depth),
      ratioToEmpty: ratioToEmpty(e.value, empty, unit),
    }),
  );
}

function figure(value: number, unit: string): string {
  if (!Number.isFinite(value)) return String(value);
  return unit === 'ms' ? value.toFixed(2) : Math.round(value).toLocaleString('en-US');
}

/**
 * One line per operation: the figure at each depth with its ratio to the
 * empty history (and "over" past the target), then both extrapolations and
 * the fits' slopes (per tenfold depth, per million rows).
 */
export function historySummary(operations: Array<{ scenario: string; unit: string; rows: Row[] }>): string {
  const lines = [
    `history: does each figure stay within ${HISTORY_TARGET}× of the empty history's? ` +
      `(ratio: D ÷ 0 for times, 0 ÷ D for the burst; "over": past ${HISTORY_TARGET}×)`,
  ];
  for (const op of operations) {
    const measured = op.rows.filter((r) => r.extra?.extrapolated !== true);
    const cells = measured.map((r) => {
      const ratio = r.extra?.ratioToEmpty as number;
      const mark = r.extra?.depth === 0 ? '' : ` ${ratio.toFixed(2)}×${ratio > HISTORY_TARGET ? ' over' : ''}`;
      return `${depthLabel(r.extra?.depth as number)}: ${figure(r.median, op.unit)}${mark}`;
    });
    lines.push(`  ${op.scenario} (${op.unit}): ${cells.join(' | ')}`);
    const parts = measured.map((r) => {
      const of = Object.entries((r.extra?.parts ?? {}) as Record<string, number>);
      return of.length === 0
        ? ''
        : `${depthLabel(r.extra?.depth as number)}: ${of.map(([k, v]) => `${k} ${figure(v, op.unit)}`).join(', ')}`;
    });
    if (parts.some((p) => p !== '')) lines.push(`    each read's own time: ${parts.join(' | ')}`);
    const fits = op.rows.filter((r) => r.extra?.extrapolated === true);
    if (fits.length === 0) lines.push('    extrapolation: needs two depths above 0');
    for (const r of fits) {
      const slope = r.extra?.slope as number;
      const growth =
        r.extra?.fit === FITS.log.label
          ? `${figure(slope, op.unit)} ${op.unit} per tenfold depth`
          : `${figure(slope * 1_000_000, op.unit)} ${op.unit} per million rows`;
      const ratio = r.extra?.ratioToEmpty as number;
      lines.push(
        `    at ${depthLabel(r.extra?.depth as number)} by ${r.extra?.fit as string}: ${figure(r.median, op.unit)} ` +
          `(${ratio.toFixed(2)}×${ratio > HISTORY_TARGET || !(ratio > 0) ? ' over' : ''}); slope ${growth}`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}
