/**
 * The daily report as CSV (RFC 4180: CRLF line ends, fields quoted when needed).
 * Durations are seconds with millisecond precision; an empty field means no job of
 * that kind finished that day.
 */
import type { KindDayStats } from '../../queue/daily_stats.ts';

export const CSV_HEADER = [
  'day',
  'kind',
  'completed',
  'retried',
  'dead_lettered',
  'wait_p50_s',
  'wait_p95_s',
  'wait_p99_s',
  'run_p50_s',
  'run_p95_s',
  'run_p99_s',
] as const;

function text(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

function seconds(value: number | null): string {
  return value === null ? '' : value.toFixed(3);
}

export function renderCsv(day: string, stats: KindDayStats[]): string {
  const lines = [CSV_HEADER.join(',')];
  for (const s of stats) {
    lines.push(
      [
        day,
        text(s.kind),
        s.completed,
        s.retried,
        s.deadLettered,
        ...[s.waitP50, s.waitP95, s.waitP99, s.runP50, s.runP95, s.runP99].map(seconds),
      ].join(','),
    );
  }
  return `${lines.join('\r\n')}\r\n`;
}
