/**
 * The options reader's thread, stopped while it is still importing a task's
 * module (a supervisor stopped within its first seconds, or mid start-up read
 * of every task): the reads in flight answer "no options" and report no
 * problem. Before, each answered with the problem "the supervisor is stopping;
 * options ignored", which every such stop logged as a warning about a task
 * that had nothing wrong with it.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { OptionsReader } from '../../src/supervisor/build/options_reader.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';

let work: string;
let gate: string;

before(() => {
  work = mkdtempSync(path.join(tmpdir(), 'jobvisor-options-'));
  gate = path.join(work, 'open');
  // The thread copies the environment when it starts.
  process.env.JOBVISOR_TEST_IMPORT_GATE = gate;
});

after(() => {
  writeFileSync(gate, '');
  delete process.env.JOBVISOR_TEST_IMPORT_GATE;
  rmSync(work, { recursive: true, force: true });
});

describe('closing the options reader', () => {
  it('answers a read still importing its module with no options and no problem', async () => {
    const reader = new OptionsReader([FIXTURE_TASKS]);
    const read = reader.read('gated_import');
    await until(
      'the thread is importing gated_import',
      () => Promise.resolve(existsSync(`${gate}.imports`)),
      (seen) => seen,
      15_000,
    );
    await reader.close();
    assert.deepEqual(await read, { options: null, problems: [] });
    assert.deepEqual(await reader.read('gated_import'), { options: null, problems: [] });
  });
});
