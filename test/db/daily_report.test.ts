import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import type pg from 'pg';
import { getDocumentProxy } from 'unpdf';
import dailyReport from '../../src/tasks/daily_report.ts';
import { CSV_HEADER } from '../../src/tasks/support/report_csv.ts';
import { createTestDatabase } from '../helpers/db.ts';
import { taskContext } from '../helpers/task_context.ts';

let db: { url: string; pool: pg.Pool; drop(): Promise<void> };
let dir: string;

/** 2024-03-10 is also the day New York moves its clocks forward: a 23-hour day there. */
const DAY = '2024-03-10';
const at = (time: string) => `${DAY}T${time}Z`;

interface Row {
  kind: string;
  status: string;
  runAt?: string;
  startedAt?: string;
  finishedAt?: string;
  createdAt?: string;
  errors?: { attempt: number; at: string; error: string }[];
}

async function insert(rows: Row[]): Promise<string[]> {
  const ids: string[] = [];
  for (const r of rows) {
    const {
      rows: [row],
    } = await db.pool.query<{ id: string }>(
      `INSERT INTO jobvisor.jobs (kind, status, attempts, run_at, started_at, finished_at, created_at, errors)
       VALUES ($1, $2, $3, coalesce($4::timestamptz, now()), $5, $6, coalesce($7::timestamptz, $4::timestamptz, now()), $8::jsonb)
       RETURNING id`,
      [
        r.kind,
        r.status,
        (r.errors?.length ?? 0) + (r.status === 'pending' ? 0 : 1),
        r.runAt ?? null,
        r.startedAt ?? null,
        r.finishedAt ?? null,
        r.createdAt ?? null,
        JSON.stringify(r.errors ?? []),
      ],
    );
    ids.push(row!.id);
  }
  return ids;
}

/** A finished job that waited `wait` s after run_at and ran `runFor` s, finishing at `finishedAt`. */
function finished(
  kind: string,
  status: 'done' | 'failed',
  finishedAt: string,
  wait: number,
  runFor: number,
  errors: Row['errors'] = [],
): Row {
  const end = Date.parse(finishedAt);
  const startedAt = new Date(end - runFor * 1000).toISOString();
  const runAt = new Date(end - (runFor + wait) * 1000).toISOString();
  return { kind, status, runAt, startedAt, finishedAt, errors };
}

/** percentile_cont: linear interpolation between the closest ranks. */
function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const pos = p * (sorted.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.min(lo + 1, sorted.length - 1);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

const seconds = (values: number[]) => [0.5, 0.95, 0.99].map((p) => percentile(values, p).toFixed(3));

function ctx(options: { id?: string; reportsDir?: string } = {}) {
  return taskContext({
    db: db.pool,
    job: { id: options.id ?? '0', kind: 'daily_report' },
    config: { reports: { dir: options.reportsDir ?? dir } },
  });
}

/** The PDF's pages and text: each text run on its own line, as a reader would copy it. */
async function readPdf(file: string): Promise<{ pages: number; text: string }> {
  const pdf = await getDocumentProxy(new Uint8Array(await readFile(file)));
  try {
    const lines: string[] = [];
    for (let n = 1; n <= pdf.numPages; n++) {
      const content = await (await pdf.getPage(n)).getTextContent();
      for (const item of content.items) if ('str' in item) lines.push(item.str + (item.hasEOL ? '\n' : ' '));
    }
    return { pages: pdf.numPages, text: lines.join('') };
  } finally {
    await pdf.destroy();
  }
}

async function pdfText(file: string): Promise<string> {
  return (await readPdf(file)).text;
}

async function csvLines(file: string): Promise<string[]> {
  const text = await readFile(file, 'utf8');
  assert.ok(text.endsWith('\r\n'), 'RFC 4180 line ends');
  return text.slice(0, -2).split('\r\n');
}

before(async () => {
  db = await createTestDatabase();
});

after(async () => {
  await db.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

beforeEach(async () => {
  await db.pool.query('TRUNCATE jobvisor.jobs');
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = await mkdtemp(path.join(tmpdir(), 'jobvisor-report-'));
});

describe('daily_report', () => {
  test('aggregates the day per kind into a CSV and a PDF that names the day', async () => {
    await insert([
      finished('email', 'done', at('00:00:00.000'), 1, 0.5), // first instant of the day
      finished('email', 'done', at('08:00:00'), 2, 1.0, [{ attempt: 1, at: at('07:59:00'), error: 'smtp timeout' }]),
      finished('email', 'done', at('12:00:00'), 4, 1.5),
      finished('email', 'done', at('23:59:59.999'), 8, 3.0),
      finished('email', 'done', '2024-03-09T23:59:59.999Z', 100, 100), // the day before
      finished('email', 'done', '2024-03-11T00:00:00.000Z', 100, 100), // the day after
      // Dead-lettered on the day after three failures: the first was the day before,
      // the last is the dead letter itself, so one retry counts for the day.
      finished('thumbnail', 'failed', at('02:00:00'), 0.25, 2, [
        { attempt: 1, at: '2024-03-09T23:00:00Z', error: 'boom' },
        { attempt: 2, at: at('01:00:00'), error: 'boom' },
        { attempt: 3, at: at('02:00:00'), error: 'source not found' },
      ]),
      finished('thumbnail', 'done', at('03:00:00'), 0.5, 6),
      // Only a failed attempt on the day, waiting for its retry.
      {
        kind: 'a,b "quoted"',
        status: 'pending',
        runAt: '2024-03-11T01:00:00Z',
        errors: [{ attempt: 1, at: at('22:00:00'), error: 'later' }],
      },
      { kind: 'email', status: 'cancelled', runAt: at('05:00:00'), finishedAt: at('05:00:00') },
      { kind: 'email', status: 'running', runAt: at('05:00:00'), startedAt: at('05:00:01') },
    ]);

    const result = await dailyReport({ day: DAY }, ctx());
    assert.deepEqual(result, {
      day: DAY,
      kinds: 3,
      csv: path.join(dir, `${DAY}.csv`),
      pdf: path.join(dir, `${DAY}.pdf`),
    });
    assert.deepEqual((await readdir(dir)).sort(), [`${DAY}.csv`, `${DAY}.pdf`]);

    assert.deepEqual(await csvLines(result.csv), [
      CSV_HEADER.join(','),
      `${DAY},"a,b ""quoted""",0,1,0,,,,,,`,
      [DAY, 'email', 4, 1, 0, ...seconds([1, 2, 4, 8]), ...seconds([0.5, 1, 1.5, 3])].join(','),
      [DAY, 'thumbnail', 1, 1, 1, ...seconds([0.25, 0.5]), ...seconds([2, 6])].join(','),
    ]);

    const text = await pdfText(result.pdf);
    assert.match(text, /jobvisor daily report: 2024-03-10/);
    assert.match(text, /from 2024-03-10 00:00 to 24:00 \(UTC\)/);
    assert.match(text, /email\s+4\s+1\s+0\s+3\.0 s\s+7\.4 s\s+1\.3 s\s+2\.8 s/);
    assert.match(text, /thumbnail\s+1\s+1\s+1\s+375 ms\s+488 ms\s+4\.0 s\s+5\.8 s/);
    assert.match(text, /all kinds\s+5\s+3\s+1/);
    assert.match(text, /Jobs per kind/);
  });

  test('a repeat run writes the same bytes and leaves no temporary file', async () => {
    await insert([finished('email', 'done', at('10:00:00'), 1, 1)]);
    const first = await dailyReport({ day: DAY }, ctx());
    const csv = await readFile(first.csv);
    const pdf = await readFile(first.pdf);
    await dailyReport({ day: DAY }, ctx());
    assert.deepEqual(await readFile(first.csv), csv);
    assert.deepEqual(await readFile(first.pdf), pdf);
    assert.deepEqual((await readdir(dir)).sort(), [`${DAY}.csv`, `${DAY}.pdf`]);
  });

  test('without a day it reports the day before the job was due, also on a retry', async () => {
    await insert([finished('email', 'done', at('10:00:00'), 1, 1)]);
    // Fired by the 02:00 schedule on the 11th; its retry moved run_at past midnight.
    const [scheduled, retried] = await insert([
      { kind: 'daily_report', status: 'running', runAt: '2024-03-11T02:00:00Z' },
      { kind: 'daily_report', status: 'running', createdAt: '2024-03-11T02:00:00Z', runAt: '2024-03-12T00:30:00Z' },
    ]);
    for (const id of [scheduled!, retried!]) {
      const result = await dailyReport({}, ctx({ id, reportsDir: path.join(dir, id) }));
      assert.equal(result.day, DAY);
      assert.equal((await csvLines(result.csv))[1]?.split(',')[2], '1');
    }
  });

  test('payload.timezone sets where the day starts and ends', async () => {
    await insert([
      finished('email', 'done', '2024-03-11T03:00:00Z', 1, 1), // 23:00 on the 10th in New York
      finished('email', 'done', at('04:30:00'), 1, 1), // 23:30 on the 9th in New York
    ]);
    const [job] = await insert([{ kind: 'daily_report', status: 'running', runAt: '2024-03-11T06:00:00Z' }]); // 02:00 EDT
    const ny = await dailyReport({ timezone: 'America/New_York' }, ctx({ id: job! }));
    assert.equal(ny.day, DAY);
    assert.equal((await csvLines(ny.csv))[1]?.split(',')[2], '1');
    assert.match(await pdfText(ny.pdf), /\(America\/New_York\)/);
  });

  test('a day without activity still gets both files', async () => {
    const result = await dailyReport({ day: '2024-02-29' }, ctx());
    assert.deepEqual(await csvLines(result.csv), [CSV_HEADER.join(',')]);
    const text = await pdfText(result.pdf);
    assert.match(text, /jobvisor daily report: 2024-02-29/);
    assert.match(text, /No job completed, failed or was retried on this day/);
  });

  test('many kinds flow onto further pages', async () => {
    const kinds = Array.from({ length: 90 }, (_, i) => `kind_${String(i).padStart(2, '0')}`);
    await insert(kinds.map((kind, i) => finished(kind, 'done', at('09:00:00'), i / 10, 1)));
    const result = await dailyReport({ day: DAY }, ctx());
    assert.equal((await csvLines(result.csv)).length, 91);
    const text = await pdfText(result.pdf);
    for (const kind of kinds) assert.match(text, new RegExp(`${kind}\\s+1\\s+0\\s+0`));
    assert.match(text, /the 12 busiest of 90 kinds/);
    const { pages } = await readPdf(result.pdf);
    assert.ok(pages >= 3, `${pages} pages`);
  });

  test('an invalid day or time zone is a permanent error and writes nothing', async () => {
    const cases: [unknown, RegExp][] = [
      [{ day: '2024-02-30' }, /payload\.day must be a calendar day written YYYY-MM-DD, got "2024-02-30"/],
      [{ day: '2024-3-1' }, /payload\.day/],
      [{ day: '10/03/2024' }, /payload\.day/],
      [{ day: 20240310 }, /payload\.day.*20240310/],
      [{ day: 'yesterday' }, /payload\.day/],
      [{ day: DAY, timezone: 'Mars/Olympus_Mons' }, /payload\.timezone must be an IANA time zone/],
      [{ timezone: 5 }, /payload\.timezone/],
      ['2024-03-10', /payload must be an object/],
    ];
    for (const [payload, message] of cases) {
      await assert.rejects(dailyReport(payload, ctx()), (err: Error & { permanent?: boolean }) => {
        assert.equal(err.permanent, true, err.message);
        assert.match(err.message, message);
        return true;
      });
    }
    assert.deepEqual(await readdir(dir), []);
  });
});
