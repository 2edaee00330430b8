/** The test helpers themselves: polling and temporary files. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { until, untilDefined } from '../helpers/poll.ts';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

describe('test helpers', () => {
  it('writeConfig leaves no temporary folder behind when the process exits', async () => {
    const script = `
      import { writeConfig } from './test/helpers/supervisor.ts';
      process.stdout.write(writeConfig({ jobs: { maxAttempts: 3 } }));
    `;
    const { stdout: file } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: root,
    });
    assert.match(file, /config\.json$/);
    assert.equal(existsSync(path.dirname(file)), false, `${path.dirname(file)} was removed`);
  });

  it('until returns the first value that passes, and names what it waited for on timeout', async () => {
    let n = 0;
    assert.equal(
      await until(
        'n reaches 3',
        () => Promise.resolve(++n),
        (v) => v >= 3,
        5_000,
        1,
      ),
      3,
    );
    await assert.rejects(
      until(
        'never',
        () => Promise.resolve(0),
        (v) => v > 0,
        30,
        5,
      ),
      /never: not reached within 30 ms; last value: 0/,
    );
    let tries = 0;
    const probe = () => (++tries < 3 ? Promise.reject(new Error('not yet')) : Promise.resolve('up'));
    assert.equal(await untilDefined('probe answers', 5_000, probe), 'up');
  });
});
