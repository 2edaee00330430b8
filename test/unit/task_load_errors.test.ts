/**
 * What a task that cannot be loaded says. The hint about ES module tasks
 * (the .mjs extension, or "type": "module") comes only with the error Node.js
 * gives when it reads ES module syntax as CommonJS; a task whose module throws
 * while it loads is reported with its own message alone.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { loadTask, TaskLoadError } from '../../src/worker/loader.ts';
import { sharedPackage } from '../helpers/compile.ts';

const HINT = /an ES module task needs the \.mjs extension or a package\.json with "type": "module"/;
const dirs: string[] = [];

after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A tasks folder whose package.json has `type`, holding `files`. */
function tasksFolder(type: 'module' | 'commonjs', files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'jobvisor-task-load-'));
  dirs.push(dir);
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type }));
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  return dir;
}

async function loadError(dir: string, kind: string): Promise<TaskLoadError> {
  try {
    await loadTask({ files: {}, dirs: [dir] }, kind);
  } catch (err) {
    assert.ok(err instanceof TaskLoadError, `a TaskLoadError, got ${String(err)}`);
    return err;
  }
  assert.fail(`task ${kind} loaded`);
}

describe('a task that cannot be loaded', () => {
  it('ES module syntax in a CommonJS folder: the message says to use .mjs or "type": "module"', () => {
    const dir = tasksFolder('commonjs', {
      'exported.js': 'export default async function exported() {}\n',
      'imports.js': "import os from 'node:os';\nmodule.exports = async () => os.hostname();\n",
    });
    const loader = pathToFileURL(path.join(sharedPackage().dist, 'worker/loader.js')).href;
    for (const kind of ['exported', 'imports']) {
      // Prints the error's message; a task that loads prints nothing.
      const script = `const { loadTask } = await import(${JSON.stringify(loader)});
        await loadTask({ files: {}, dirs: [${JSON.stringify(dir)}] }, ${JSON.stringify(kind)})
          .then(() => {}, (err) => process.stdout.write(err.name + ': ' + err.message));`;
      const out = execFileSync(process.execPath, ['--no-warnings', '--input-type=module', '-e', script], {
        encoding: 'utf8',
      });
      assert.match(out, /^TaskLoadError: /, `${kind}: ${out}`);
      assert.match(out, HINT, out);
    }
  });

  it('a module that throws while it loads: its own message, without the hint', async () => {
    const dir = tasksFolder('module', {
      'needs_key.js':
        "if (!process.env.NO_SUCH_KEY) throw new Error('NO_SUCH_KEY is not set');\nexport default async () => {};\n",
    });
    const err = await loadError(dir, 'needs_key');
    assert.match(err.message, /could not be loaded: NO_SUCH_KEY is not set$/);
    assert.doesNotMatch(err.message, HINT);
  });
});
