/**
 * The test runner's choice of the next file to start (test/helpers/schedule.ts):
 * always up to `concurrency`, more only while the CPUs sit idle and the last
 * start has had time to show, never two files of one group side by side.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { IDLE_TO_ADD, nextFile, RAMP_MS, type SchedulerState } from '../helpers/schedule.ts';

const state = (over: Partial<SchedulerState>): SchedulerState => ({
  running: [],
  waiting: ['a', 'b', 'c'],
  concurrency: 2,
  maxConcurrency: 4,
  group: () => undefined,
  idle: 0,
  sinceLastStartMs: 0,
  ...over,
});

describe('nextFile', () => {
  it('starts the first waiting file below `concurrency`, however busy the CPUs', () => {
    assert.equal(nextFile(state({ running: ['x'], idle: 0 })), 'a');
    assert.equal(nextFile(state({ running: [], idle: undefined })), 'a');
  });

  it('starts one more only while the CPUs sit idle and the last start is RAMP_MS old', () => {
    const full = { running: ['x', 'y'] };
    assert.equal(nextFile(state({ ...full, idle: IDLE_TO_ADD, sinceLastStartMs: RAMP_MS })), 'a');
    assert.equal(nextFile(state({ ...full, idle: IDLE_TO_ADD - 0.01, sinceLastStartMs: RAMP_MS })), undefined);
    assert.equal(nextFile(state({ ...full, idle: 0.9, sinceLastStartMs: RAMP_MS - 1 })), undefined);
    assert.equal(nextFile(state({ ...full, idle: undefined, sinceLastStartMs: RAMP_MS })), undefined);
  });

  it('never goes past `maxConcurrency`', () => {
    assert.equal(nextFile(state({ running: ['w', 'x', 'y', 'z'], idle: 1, sinceLastStartMs: 60_000 })), undefined);
  });

  it('skips a file whose group already runs, and takes the next one', () => {
    const group = (f: string) => (f === 'a' || f === 'p' ? 'packing' : undefined);
    assert.equal(nextFile(state({ running: ['p'], group })), 'b');
    assert.equal(nextFile(state({ running: ['p'], waiting: ['a'], group })), undefined);
    assert.equal(nextFile(state({ running: ['x'], group })), 'a');
  });

  it('starts nothing when nothing waits', () => {
    assert.equal(nextFile(state({ waiting: [] })), undefined);
  });
});
