/**
 * The PostgreSQL server the benchmark creates its throw-away databases on:
 * the configured one (DATABASE_URL / database.url), or the embedded
 * development server, started on demand and stopped again if started here.
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { loadConfig } from '../config/index.ts';
import { ensureEmbeddedPostgres } from '../db/embedded.ts';
import { createLogger } from '../log.ts';

export interface BenchServer {
  /** URL of the server's `postgres` database. */
  url: string;
  close(): Promise<void>;
}

export async function openBenchServer(): Promise<BenchServer> {
  const settings = loadConfig();
  let url = settings.database.url;
  let stop = async () => {};
  if (!url) {
    const embedded = await ensureEmbeddedPostgres({
      dir: settings.database.embedded.dir,
      port: settings.database.embedded.port,
      log: createLogger({ level: 'warn', fd: 2 }),
    });
    url = embedded.url;
    if (embedded.startedHere) stop = () => embedded.stop();
  }
  const u = new URL(url);
  u.pathname = '/postgres';
  return { url: u.toString(), close: stop };
}

export async function serverVersion(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]?.v ?? '?';
  } finally {
    await client.end();
  }
}

export function loadAverage(): string {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  } catch {
    return '?';
  }
}
