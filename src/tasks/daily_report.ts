/**
 * Built-in task `daily_report`: one day's job activity as `<reports.dir>/<day>.csv`
 * and `<reports.dir>/<day>.pdf`.
 *
 * Payload: `{ "day": "YYYY-MM-DD", "timezone": "Europe/Berlin" }`, both optional.
 * `timezone` (IANA name, default UTC) sets where the day starts and ends. Without
 * `day` the report covers the day before the job was due, in that time zone: a
 * schedule firing at 02:00 with payload `{}` reports the day that just ended, and
 * every retry of that job reports the same day (see `dayBeforeDue`).
 *
 * Idempotent: both files are written atomically and a repeat run over the same rows
 * writes the same bytes. A bad payload throws `PermanentError`.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { dailyStats, dayBeforeDue } from '../queue/daily_stats.ts';
import { PermanentError } from '../worker/errors.ts';
import type { TaskContext, TaskOptions } from '../worker/types.ts';
import { writeFileAtomic } from './support/atomic_write.ts';
import { renderCsv } from './support/report_csv.ts';
import { renderPdf } from './support/report_pdf.ts';
import { messageOf } from '../errors.ts';

/** CPU-bound (PDF rendering) and long on a big day: a thread of its own, `cpu`, ten minutes. */
export const options: TaskOptions = { exclusiveThread: true, queue: 'cpu', timeout: '10m' };

export interface DailyReportPayload {
  /** The calendar day to report, YYYY-MM-DD; the day before the job was due when absent. */
  day?: string;
  /** IANA time zone of the day's bounds; UTC when absent. */
  timezone?: string;
}

export interface DailyReportResult {
  day: string;
  kinds: number;
  csv: string;
  pdf: string;
}

const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;

function isCalendarDay(day: string): boolean {
  const m = DAY.exec(day);
  if (!m) return false;
  const [year, month, date] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const d = new Date(Date.UTC(year, month - 1, date));
  return year >= 1 && d.getUTCFullYear() === year && d.getUTCMonth() === month - 1 && d.getUTCDate() === date;
}

function isTimeZone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

/** Checks the payload's shape; throws `PermanentError` naming the first bad field. */
export function parseDailyReportPayload(payload: unknown): { day?: string; timezone: string } {
  if (payload === null || payload === undefined) return { timezone: 'UTC' };
  if (typeof payload !== 'object' || Array.isArray(payload)) {
    throw new PermanentError('daily_report payload must be an object like {"day": "2024-05-01"}');
  }
  const { day, timezone = 'UTC' } = payload as Record<string, unknown>;
  if (day !== undefined && (typeof day !== 'string' || !isCalendarDay(day))) {
    throw new PermanentError(
      `daily_report payload.day must be a calendar day written YYYY-MM-DD, got ${JSON.stringify(day)}`,
    );
  }
  if (typeof timezone !== 'string' || !isTimeZone(timezone)) {
    throw new PermanentError(
      `daily_report payload.timezone must be an IANA time zone such as "UTC" or "Europe/Berlin", got ${JSON.stringify(timezone)}`,
    );
  }
  return { ...(day === undefined ? {} : { day }), timezone };
}

export default async function dailyReport(payload: unknown, ctx: TaskContext): Promise<DailyReportResult> {
  const parsed = parseDailyReportPayload(payload);
  const store = { db: ctx.db, schema: ctx.config.schema };
  const day = parsed.day ?? (await dayBeforeDue(store, ctx.job.id, parsed.timezone));
  ctx.signal.throwIfAborted();

  const stats = await dailyStats(store, day, parsed.timezone).catch((err: unknown) => {
    // A zone name known to Intl but not to this PostgreSQL: retrying cannot help.
    if ((err as { code?: string }).code === '22023' && /time zone/i.test(messageOf(err))) {
      throw new PermanentError(`daily_report payload.timezone is not known to PostgreSQL: ${parsed.timezone}`, {
        cause: err,
      });
    }
    throw err;
  });
  ctx.signal.throwIfAborted();
  const pdfBytes = await renderPdf(day, parsed.timezone, stats);
  ctx.signal.throwIfAborted();

  const dir = ctx.config.reports.dir;
  await mkdir(dir, { recursive: true });
  const csv = path.join(dir, `${day}.csv`);
  const pdf = path.join(dir, `${day}.pdf`);
  await writeFileAtomic(csv, renderCsv(day, stats));
  await writeFileAtomic(pdf, pdfBytes);
  ctx.log.info({ day, kinds: stats.length, csv, pdf }, 'daily report written');
  return { day, kinds: stats.length, csv, pdf };
}
