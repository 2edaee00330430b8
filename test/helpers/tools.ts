/**
 * External programs some tests run: promtool and the Prometheus server, from
 * Debian's `prometheus` package, Debian's `chromium` (driven by
 * playwright-core; never a downloaded browser), Debian's `pgbouncer` (run in
 * front of a test PostgreSQL) and Debian's `faketime`. `npm test` installs the package when it can
 * (test/run.ts); when a program is still missing, the tests that need it are
 * skipped with the reason and the command that installs it, never failed.
 *
 * PROMTOOL / PROMETHEUS name another binary. JOBVISOR_TEST_INSTALL=0 stops
 * `npm test` from installing anything (as on a machine without root or apt-get).
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import path from 'node:path';

/** The command that installs these tools' Debian packages. */
export function installCommand(tools: Tool[]): string {
  return `sudo apt-get install ${[...new Set(tools.map((t) => t.debianPackage))].join(' ')}`;
}

export interface Tool {
  /** Environment variable that names another binary. */
  env: string;
  /** Program name looked up on PATH. */
  name: string;
  /** Debian package that ships it. */
  debianPackage: string;
}

export const PROMTOOL: Tool = { env: 'PROMTOOL', name: 'promtool', debianPackage: 'prometheus' };
export const PROMETHEUS: Tool = { env: 'PROMETHEUS', name: 'prometheus', debianPackage: 'prometheus' };
export const CHROMIUM: Tool = { env: 'CHROMIUM', name: 'chromium', debianPackage: 'chromium' };
export const PGBOUNCER: Tool = { env: 'PGBOUNCER', name: 'pgbouncer', debianPackage: 'pgbouncer' };
/** Debian's `faketime` (with libfaketime, which the clock-skew tests preload: test/helpers/faketime.ts). */
export const FAKETIME: Tool = { env: 'FAKETIME_PROGRAM', name: 'faketime', debianPackage: 'faketime' };

/** Test files and the tools they need. */
export const TOOLS_BY_TEST: Record<string, Tool[]> = {
  'grafana.test.ts': [PROMTOOL],
  'prometheus.test.ts': [PROMETHEUS],
  'dashboard_browser.test.ts': [CHROMIUM],
  'dashboard_rebinding.test.ts': [CHROMIUM],
  'pgbouncer.test.ts': [PGBOUNCER],
  'chaos_clock_skew.test.ts': [FAKETIME],
  'chaos_rate_pacing.test.ts': [FAKETIME],
  'dashboard_ops_browser.test.ts': [CHROMIUM],
  'docs_site.test.ts': [CHROMIUM],
};

/** The binary to run, or null when it is on neither the variable nor PATH. */
export function findTool(tool: Tool, env: NodeJS.ProcessEnv = process.env): string | null {
  const given = env[tool.env];
  if (given) return given.includes('/') ? (executable(given) ? given : null) : onPath(given, env);
  return onPath(tool.name, env);
}

/** For `describe(..., { skip })`: false when the tool is there, else why and how to install it. */
export function skipUnless(tool: Tool): false | string {
  if (findTool(tool)) return false;
  return `${tool.name} is not installed: install it with \`${installCommand([tool])}\`, or set ${tool.env} to its path`;
}

function onPath(name: string, env: NodeJS.ProcessEnv): string | null {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, name);
    if (executable(file)) return file;
  }
  return null;
}

function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Installs the Debian packages of the missing tools, as root with apt-get, with
 * packaged services kept from starting (policy-rc.d). Prints one line saying
 * what it installs. Returns a reason when it could not or may not.
 */
export function installMissing(tools: Tool[], env: NodeJS.ProcessEnv = process.env): string | null {
  const missing = tools.filter((t) => !findTool(t, env));
  if (missing.length === 0) return null;
  const packages = [...new Set(missing.map((t) => t.debianPackage))];
  if (env.JOBVISOR_TEST_INSTALL === '0') return 'JOBVISOR_TEST_INSTALL=0';
  if (process.getuid?.() !== 0) return 'not root';
  if (!onPath('apt-get', env)) return 'no apt-get';
  const names = missing.map((t) => t.name).join(', ');
  process.stdout.write(`installing Debian package ${packages.join(' ')} (for ${names}) with apt-get…\n`);
  const script = [
    'set -e',
    'added=',
    'if [ ! -e /usr/sbin/policy-rc.d ]; then printf "#!/bin/sh\\nexit 101\\n" > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; added=1; fi',
    'trap \'[ -n "$added" ] && rm -f /usr/sbin/policy-rc.d\' EXIT',
    'apt-get update -qq',
    `apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=300 ${packages.join(' ')}`,
    `systemctl disable --now ${packages.join(' ')} >/dev/null 2>&1 || true`,
  ].join('\n');
  const run = spawnSync('sh', ['-c', script], {
    env: { ...env, DEBIAN_FRONTEND: 'noninteractive' },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (run.status !== 0) {
    process.stdout.write(`${run.stdout}${run.stderr}`);
    return `apt-get install ${packages.join(' ')} failed`;
  }
  const still = missing.filter((t) => !findTool(t, env));
  return still.length ? `${still.map((t) => t.name).join(', ')} still missing after the install` : null;
}
