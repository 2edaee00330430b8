/**
 * Why docs/operations/kubernetes.md says to start the worker as `node_modules/.bin/jobvisor start`
 * (or `exec` it from a shell script), never through `npx`, `npm exec` or
 * `npm start`: a process manager signals one PID (Docker and Kubernetes PID 1,
 * tini's child, systemd's main process with KillMode=mixed). A worker-like
 * tool (it drains on SIGTERM: logs, waits, exits 0) is started each way from
 * an app folder, and SIGTERM goes to the process started:
 *   - the tool's own bin, and a shell script that `exec`s it: the tool drains;
 *   - a shell script without exec, and `npx` of the npm on PATH (npm 11.19.1
 *     here; npm 10.9.9 behaved the same when checked by hand): the process
 *     started dies at once, the tool never gets the signal and runs on,
 *     orphaned. If a newer npm forwards the signal, this test fails: that page's
 *     "Signals and process managers" is then out of date.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { until } from '../helpers/poll.ts';

const app = mkdtempSync(path.join(tmpdir(), 'jobvisor-signals-'));
const TOOL = `#!/usr/bin/env node
const fs = require('node:fs');
const log = (m) => fs.appendFileSync(process.env.TOOL_LOG, process.pid + ' ' + m + '\\n');
log('started');
process.on('SIGTERM', () => { log('got SIGTERM'); setTimeout(() => { log('drained'); process.exit(0); }, 300); });
setInterval(() => {}, 1000);
`;
const started: number[] = [];

before(() => {
  writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }));
  mkdirSync(path.join(app, 'node_modules/.bin'), { recursive: true });
  writeFileSync(path.join(app, 'node_modules/.bin/worker'), TOOL);
  writeFileSync(path.join(app, 'with-exec.sh'), '#!/bin/sh\nexec node_modules/.bin/worker\n');
  writeFileSync(path.join(app, 'without-exec.sh'), '#!/bin/sh\nnode_modules/.bin/worker\n');
  for (const f of ['node_modules/.bin/worker', 'with-exec.sh', 'without-exec.sh']) chmodSync(path.join(app, f), 0o755);
});

after(() => {
  for (const pid of started)
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  rmSync(app, { recursive: true, force: true });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Starts `command` in the app, SIGTERMs the process started, and says what became of it and of the tool. */
async function sigterm(label: string, command: string, args: string[] = []) {
  const log = path.join(app, `${label}.log`);
  writeFileSync(log, '');
  const child = spawn(command, args, { cwd: app, env: { ...process.env, TOOL_LOG: log }, stdio: 'ignore' });
  const lines = () => readFileSync(log, 'utf8').trim().split('\n').filter(Boolean);
  await until(`${label}: the tool started`, lines, (l) => l.length > 0, 30_000);
  const tool = Number(lines()[0]?.split(' ')[0]);
  started.push(tool);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  child.kill('SIGTERM');
  const exit = await exited;
  // The tool drains in 300 ms when it gets the signal: give it ten times that to show up.
  await until(`${label}: the tool settled`, () => !alive(tool) || lines().length > 1, Boolean, 3000).catch(
    () => undefined,
  );
  return { exit, toolGotSigterm: lines().some((l) => l.endsWith('got SIGTERM')), toolAlive: alive(tool) };
}

describe('SIGTERM to the process a manager started', () => {
  it('node_modules/.bin/<bin> gets it and drains', async () => {
    const r = await sigterm('bin', path.join(app, 'node_modules/.bin/worker'));
    assert.deepEqual(r, { exit: { code: 0, signal: null }, toolGotSigterm: true, toolAlive: false });
  });

  it('a shell script that execs it: the same', async () => {
    const r = await sigterm('exec', path.join(app, 'with-exec.sh'));
    assert.deepEqual(r, { exit: { code: 0, signal: null }, toolGotSigterm: true, toolAlive: false });
  });

  it('a shell script without exec dies and leaves the tool running, never signalled', async () => {
    const r = await sigterm('no-exec', path.join(app, 'without-exec.sh'));
    assert.deepEqual(r, { exit: { code: null, signal: 'SIGTERM' }, toolGotSigterm: false, toolAlive: true });
  });

  it('npx dies and leaves the tool running, never signalled', async (t) => {
    t.diagnostic(`npm ${spawnSync('npm', ['--version'], { encoding: 'utf8' }).stdout.trim()}`);
    const r = await sigterm('npx', 'npx', ['--no-install', 'worker']);
    assert.deepEqual(r, { exit: { code: null, signal: 'SIGTERM' }, toolGotSigterm: false, toolAlive: true });
  });
});
