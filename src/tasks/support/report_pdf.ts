/**
 * The daily report as a one-to-few page A4 PDF: a title naming the day, a table of
 * per-kind activity (with a totals row) and a horizontal bar chart of completed,
 * retried and dead-lettered jobs for the busiest kinds.
 *
 * The output is deterministic: the document date is the report's day, so a repeat
 * run over the same rows gives the same bytes. Only the built-in Helvetica fonts
 * are used (no font files to ship).
 */
import type { KindDayStats } from '../../queue/daily_stats.ts';
import { optionalPackage } from './optional_package.ts';

// pdfkit is an optional peer dependency, imported by the first report of a thread.
const loadPdfkit = optionalPackage('pdfkit', 'daily_report', async () => (await import('pdfkit')).default);

const MARGIN = 50;
const ROW = 16;
const CHART_KINDS = 12;
const COLORS = { completed: '#2e7d32', retried: '#f9a825', deadLettered: '#c62828' } as const;
const SERIES = [
  { key: 'completed', label: 'completed' },
  { key: 'retried', label: 'retried' },
  { key: 'deadLettered', label: 'dead-lettered' },
] as const;

interface Column {
  title: string;
  width: number;
  value: (s: KindDayStats) => string;
}

const COLUMNS: Column[] = [
  { title: 'kind', width: 130, value: (s) => s.kind },
  { title: 'completed', width: 52, value: (s) => String(s.completed) },
  { title: 'retried', width: 45, value: (s) => String(s.retried) },
  { title: 'dead-lettered', width: 58, value: (s) => String(s.deadLettered) },
  { title: 'wait p50', width: 52.5, value: (s) => duration(s.waitP50) },
  { title: 'wait p95', width: 52.5, value: (s) => duration(s.waitP95) },
  { title: 'run p50', width: 52.5, value: (s) => duration(s.runP50) },
  { title: 'run p95', width: 52.5, value: (s) => duration(s.runP95) },
];

/** A duration in seconds, written for a person: "850 ms", "12.3 s", "4.5 min", "2.0 h". */
export function duration(seconds: number | null): string {
  if (seconds === null) return '-';
  if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  if (seconds < 120) return `${seconds.toFixed(1)} s`;
  if (seconds < 7200) return `${(seconds / 60).toFixed(1)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

/** Cuts `text` with "..." so that it fits `width` points in the current font. */
function fit(doc: PDFKit.PDFDocument, text: string, width: number): string {
  if (doc.widthOfString(text) <= width) return text;
  let cut = text;
  while (cut.length > 1 && doc.widthOfString(`${cut}...`) > width) cut = cut.slice(0, -1);
  return `${cut}...`;
}

function bottom(doc: PDFKit.PDFDocument): number {
  return doc.page.height - MARGIN;
}

function tableRow(doc: PDFKit.PDFDocument, cells: string[], y: number, bold: boolean): void {
  doc
    .font(bold ? 'Helvetica-Bold' : 'Helvetica')
    .fontSize(8.5)
    .fillColor('#000000');
  let x = MARGIN;
  COLUMNS.forEach((column, i) => {
    const text = fit(doc, cells[i] ?? '', column.width - 4);
    doc.text(text, x, y + 4, { width: column.width - 4, align: i === 0 ? 'left' : 'right', lineBreak: false });
    x += column.width;
  });
}

function rule(doc: PDFKit.PDFDocument, y: number, color = '#999999'): void {
  doc
    .moveTo(MARGIN, y)
    .lineTo(doc.page.width - MARGIN, y)
    .lineWidth(0.5)
    .strokeColor(color)
    .stroke();
}

function drawTable(doc: PDFKit.PDFDocument, stats: KindDayStats[], startY: number): number {
  const header = () => {
    tableRow(
      doc,
      COLUMNS.map((c) => c.title),
      y,
      true,
    );
    rule(doc, y + ROW, '#000000');
    y += ROW;
  };
  let y = startY;
  header();
  for (const s of stats) {
    if (y + 2 * ROW > bottom(doc)) {
      doc.addPage();
      y = MARGIN;
      header();
    }
    tableRow(
      doc,
      COLUMNS.map((c) => c.value(s)),
      y,
      false,
    );
    rule(doc, y + ROW, '#dddddd');
    y += ROW;
  }
  const total = (key: 'completed' | 'retried' | 'deadLettered') => String(stats.reduce((sum, s) => sum + s[key], 0));
  tableRow(doc, ['all kinds', total('completed'), total('retried'), total('deadLettered')], y, true);
  return y + ROW;
}

function drawChart(doc: PDFKit.PDFDocument, stats: KindDayStats[], startY: number): void {
  const kinds = [...stats]
    .sort(
      (a, b) =>
        b.completed + b.retried + b.deadLettered - (a.completed + a.retried + a.deadLettered) ||
        a.kind.localeCompare(b.kind),
    )
    .slice(0, CHART_KINDS);
  const groupHeight = 3 * 7 + 8;
  let y = startY;
  if (y + 60 + kinds.length * groupHeight > bottom(doc)) {
    doc.addPage();
    y = MARGIN;
  }
  const busiest = kinds.length < stats.length ? `, the ${kinds.length} busiest of ${stats.length} kinds` : '';
  doc.font('Helvetica-Bold').fontSize(12).fillColor('#000000').text(`Jobs per kind${busiest}`, MARGIN, y);
  y += 20;

  let x = MARGIN;
  doc.font('Helvetica').fontSize(8);
  for (const series of SERIES) {
    doc.rect(x, y + 1, 8, 6).fill(COLORS[series.key]);
    doc.fillColor('#000000').text(series.label, x + 11, y, { lineBreak: false });
    x += 11 + doc.widthOfString(series.label) + 14;
  }
  y += 16;

  const labelWidth = 130;
  const barLeft = MARGIN + labelWidth;
  const barSpace = doc.page.width - MARGIN - barLeft - 40;
  const max = Math.max(1, ...kinds.flatMap((s) => [s.completed, s.retried, s.deadLettered]));
  for (const s of kinds) {
    doc
      .font('Helvetica')
      .fontSize(8.5)
      .fillColor('#000000')
      .text(fit(doc, s.kind, labelWidth - 8), MARGIN, y + 8, { width: labelWidth - 8, lineBreak: false });
    SERIES.forEach((series, i) => {
      const value = s[series.key];
      const barY = y + i * 7;
      const width = (value / max) * barSpace;
      if (width > 0) doc.rect(barLeft, barY, Math.max(width, 0.75), 6).fill(COLORS[series.key]);
      doc
        .font('Helvetica')
        .fontSize(6)
        .fillColor('#333333')
        .text(String(value), barLeft + width + 3, barY, { lineBreak: false });
    });
    y += groupHeight;
  }
}

/**
 * Renders the report for `day`; `timezone` only labels the day's bounds. Resolves to the PDF bytes.
 * @throws PermanentError when pdfkit is not installed.
 */
export async function renderPdf(day: string, timezone: string, stats: KindDayStats[]): Promise<Buffer> {
  const PDFDocument = await loadPdfkit();
  const doc = new PDFDocument({
    size: 'A4',
    margin: MARGIN,
    info: {
      Title: `jobvisor daily report ${day}`,
      Creator: 'jobvisor',
      Producer: 'jobvisor',
      CreationDate: new Date(`${day}T00:00:00Z`),
    },
  });
  const chunks: Buffer[] = [];
  const done = new Promise<Buffer>((resolve, reject) => {
    doc.on('data', (chunk: Buffer) => chunks.push(chunk));
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
  });

  doc.font('Helvetica-Bold').fontSize(18).text(`jobvisor daily report: ${day}`, MARGIN, MARGIN);
  doc
    .font('Helvetica')
    .fontSize(10)
    .fillColor('#444444')
    .text(
      `Job activity per kind from ${day} 00:00 to 24:00 (${timezone}). Durations are of the latest attempt; p99 values are in the CSV.`,
    );
  let y = doc.y + 14;
  if (stats.length === 0) {
    doc
      .font('Helvetica')
      .fontSize(11)
      .fillColor('#000000')
      .text('No job completed, failed or was retried on this day.', MARGIN, y);
  } else {
    y = drawTable(doc, stats, y);
    drawChart(doc, stats, y + 24);
  }
  doc.end();
  return done;
}
