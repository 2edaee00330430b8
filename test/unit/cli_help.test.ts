/**
 * Help on every command, from the one command registry: `COMMAND --help` and
 * `jobvisor help COMMAND` print usage, options with defaults and an example,
 * exit 0, without a database. The command table of docs/reference/cli.md is
 * rendered from the same registry (test/docs_reference.test.ts checks it is current).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BENCH_ARGS } from '../../src/bench/options.ts';
import { COMMAND_SPECS } from '../../src/cli/commands.ts';
import { COMMAND_NAMES } from '../../src/cli/main.ts';
import { runCliInProcess } from '../helpers/cli.ts';

/** Nothing listens here: help must not need the database. */
const NO_DATABASE = 'postgres://nobody@127.0.0.1:1/none';

describe('help', () => {
  it("bench's help lists exactly the options bench parses", () => {
    const spec = COMMAND_SPECS.find((c) => c.name === 'bench');
    const listed = (spec?.options ?? []).map((o) => o.flag.split(' ')[0]).sort();
    assert.deepEqual(
      listed,
      Object.keys(BENCH_ARGS)
        .map((k) => `--${k}`)
        .sort(),
    );
  });

  for (const spec of COMMAND_SPECS) {
    it(`jobvisor ${spec.name} --help and jobvisor help ${spec.name}`, async () => {
      const asOption = await runCliInProcess(NO_DATABASE, [...spec.name.split(' '), '--help']);
      assert.equal(asOption.code, 0, asOption.stderr);
      assert.equal(asOption.stderr, '');
      assert.match(asOption.stdout, new RegExp(`^usage: jobvisor ${spec.name}`));
      for (const option of spec.options) {
        assert.ok(asOption.stdout.includes(option.flag), option.flag);
        if (option.default) assert.ok(asOption.stdout.includes(`(default: ${option.default})`), option.flag);
      }
      assert.ok(asOption.stdout.includes(`example:\n  ${spec.example}`));
      const asCommand = await runCliInProcess(NO_DATABASE, ['help', ...spec.name.split(' ')]);
      assert.equal(asCommand.code, 0);
      assert.equal(asCommand.stdout, asOption.stdout);
    });
  }

  it('bench --help answers even after other options (it was "Unknown option")', async () => {
    const r = await runCliInProcess(NO_DATABASE, ['bench', '--jobs', '5', '--help']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /--jobs-per-thread N/);
  });

  it('jobvisor help jobs lists every jobs subcommand; an unknown command is bad usage', async () => {
    const r = await runCliInProcess(NO_DATABASE, ['help', 'jobs']);
    assert.equal(r.code, 0);
    for (const sub of ['list', 'retry', 'cancel']) assert.match(r.stdout, new RegExp(`usage: jobvisor jobs ${sub}`));
    const bad = await runCliInProcess(NO_DATABASE, ['help', 'nope']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /unknown command "nope"/);
  });

  it('every command main runs is described in the registry, and every described command runs', () => {
    const described = new Set(COMMAND_SPECS.map((c) => c.name.split(' ')[0]));
    assert.deepEqual([...described].sort(), [...COMMAND_NAMES].sort());
  });

  it('jobvisor --help names every command', async () => {
    const r = await runCliInProcess(NO_DATABASE, ['--help']);
    assert.equal(r.code, 0);
    for (const spec of COMMAND_SPECS) assert.ok(r.stdout.includes(`jobvisor ${spec.name}`), spec.name);
  });
});
