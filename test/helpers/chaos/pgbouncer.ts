/**
 * A real PgBouncer (Debian's `pgbouncer`) in front of a chaos PostgreSQL
 * (postgres.ts), in session or transaction pooling mode, on a free port.
 *
 * States: running → stopped. Clients are trusted (loopback only); PgBouncer
 * logs in to PostgreSQL with the server's password, from its [databases]
 * entry. Nothing is relaxed for jobvisor: no `ignore_startup_parameters`, so a
 * startup parameter PgBouncer does not know fails as it does in production.
 * PgBouncer refuses to run as root: as root it runs as the `postgres` user.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { findTool, PGBOUNCER } from '../tools.ts';
import { freePort, waitAccepting, type ChaosPostgres } from './postgres.ts';

export interface PgBouncer {
  readonly port: number;
  readonly mode: 'session' | 'transaction';
  /** `url` (a database of the server) with PgBouncer's host and port. */
  urlFor(url: string): string;
  log(): string;
  /** Stops it (SIGINT) and deletes its folder. Idempotent. */
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

export async function startPgBouncer(
  server: ChaosPostgres,
  database: string,
  mode: 'session' | 'transaction',
  options: { poolSize?: number } = {},
): Promise<PgBouncer> {
  const bin = findTool(PGBOUNCER);
  if (!bin) throw new Error('pgbouncer is not installed (apt-get install pgbouncer)');
  const dir = mkdtempSync(path.join(tmpdir(), 'jobvisor-pgbouncer-'));
  const port = await freePort();
  const ini = path.join(dir, 'pgbouncer.ini');
  const logFile = path.join(dir, 'pgbouncer.log');
  writeFileSync(path.join(dir, 'userlist.txt'), `"postgres" ""\n`);
  writeFileSync(
    ini,
    [
      '[databases]',
      `${database} = host=127.0.0.1 port=${server.port} dbname=${database} user=postgres password=${server.password}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${path.join(dir, 'userlist.txt')}`,
      `pool_mode = ${mode}`,
      `default_pool_size = ${options.poolSize ?? 20}`,
      'max_client_conn = 1000',
      `logfile = ${logFile}`,
      `pidfile = ${path.join(dir, 'pgbouncer.pid')}`,
      '',
    ].join('\n'),
  );
  const root = userInfo().uid === 0;
  let ids: { uid: number; gid: number } | undefined;
  if (root) {
    ids = {
      uid: Number(execFileSync('id', ['-u', 'postgres']).toString().trim()),
      gid: Number(execFileSync('id', ['-g', 'postgres']).toString().trim()),
    };
    for (const f of ['', 'pgbouncer.ini', 'userlist.txt']) chownSync(path.join(dir, f), ids.uid, ids.gid);
  }
  const child = spawn(bin, [ini], { stdio: 'ignore', ...(ids && { uid: ids.uid, gid: ids.gid }) });
  live.add(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => live.delete(child));
  const bouncer: PgBouncer = {
    port,
    mode,
    urlFor(url) {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    log() {
      try {
        return readFileSync(logFile, 'utf8');
      } catch {
        return '';
      }
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGINT');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await waitAccepting(bouncer.urlFor(server.urlOf(database)), 15_000);
  } catch (err) {
    const log = bouncer.log();
    await bouncer.stop();
    throw new Error(`pgbouncer did not start: ${log.slice(-2000)}`, { cause: err });
  }
  return bouncer;
}
