/**
 * Bulk enqueue through COPY: for large batches without unique keys, COPY FROM
 * STDIN is the fastest way into the table (no per-row planning or array
 * parsing). Ids are reserved from the table's sequence first, in the same
 * round trip as the database's clock, so results keep their order and delays
 * use the database's time like every other statement. COPY fires the
 * statement-level insert trigger once: one NOTIFY per batch.
 */
import { from as copyFrom } from 'pg-copy-streams';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { withConnection } from '../db/borrow.ts';
import type { Db } from '../db/pool.ts';
import { qualify } from '../db/schema.ts';
import type { JobRow } from './job_row.ts';
import { planned, run, type Store } from './sql.ts';

// The ids come back as one comma-separated text: splitting it is several times
// cheaper for the caller than parsing a 20,000-element array literal.
const RESERVE_IDS = planned(
  'reserve_ids',
  `
SELECT extract(epoch FROM now()) * 1000 AS now_ms,
       array_to_string(array(SELECT nextval('jobvisor.jobs_id_seq') FROM generate_series(1, $1::int)), ',') AS ids`,
);

const COPY_JOBS =
  'COPY jobvisor.jobs (id, queue, kind, payload, priority, max_attempts, run_at, trace_context) FROM STDIN';

/** COPY text format: backslash, tab, newline and carriage return are escaped. */
function field(text: string): string {
  return /[\\\t\n\r]/.test(text)
    ? text.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r')
    : text;
}

/**
 * Inserts validated rows with COPY; returns their ids in order. `traceContext`
 * (JSON text, or null) is written on every row.
 */
export async function copyRows(
  db: Db,
  schema: string,
  rows: JobRow[],
  traceContext: string | null = null,
): Promise<string[]> {
  return withConnection(db, async (client) => {
    const store: Store = { db: client, schema };
    const [reserved] = await run<{ now_ms: string; ids: string }>(store, RESERVE_IDS, [rows.length]);
    const nowMs = Number(reserved?.now_ms);
    const ids = reserved?.ids ? reserved.ids.split(',') : [];
    const now = new Date(nowMs).toISOString();
    const trace = traceContext === null ? '\\N' : field(traceContext);
    const lines = rows.map((r, i) => {
      const runAt = r.runAt ?? (r.delayMs ? new Date(nowMs + r.delayMs).toISOString() : now);
      return `${ids[i]}\t${r.queue}\t${r.kind}\t${field(r.payload)}\t${r.priority}\t${r.maxAttempts ?? 8}\t${runAt}\t${trace}\n`;
    });
    const stream = client.query(copyFrom(qualify(COPY_JOBS, schema)));
    await pipeline(Readable.from(chunks(lines)), stream);
    return ids;
  });
}

/** ~64 KiB chunks: one write per chunk, not per row. */
function* chunks(lines: string[]): Generator<string> {
  let buffer = '';
  for (const line of lines) {
    buffer += line;
    if (buffer.length >= 65_536) {
      yield buffer;
      buffer = '';
    }
  }
  if (buffer) yield buffer;
}

export { RESERVE_IDS };
