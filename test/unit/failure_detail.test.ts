/**
 * The test runner's closing account of a failed file (test/helpers/schedule.ts):
 * the spec reporter's "failing tests" section, or the last lines of a file
 * that ended without one, shortened.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { failureDetail } from '../helpers/schedule.ts';

describe('failureDetail', () => {
  it("gives the reporter's failing-tests section, without what came before it", () => {
    const output = [
      '▶ cluster',
      '  ✖ recycles (12.3ms)',
      '✖ failing tests:',
      '',
      'test at test/system/cluster_recycle.test.ts:45:3',
      '✖ recycles (12.3ms)',
      '  AssertionError [ERR_ASSERTION]: Expected values to be strictly equal: 3 !== 2',
    ].join('\n');
    const detail = failureDetail(output);
    assert.match(detail, /^test at test\/system\/cluster_recycle/);
    assert.match(detail, /3 !== 2/);
    assert.doesNotMatch(detail, /▶ cluster/);
  });

  it('gives the last lines of an output without that section (a crash, a timeout), at most 40', () => {
    const output = Array.from({ length: 100 }, (_, i) => `line ${i}`).join('\n');
    const detail = failureDetail(output).split('\n');
    assert.equal(detail.length, 40);
    assert.equal(detail[0], 'line 60');
    assert.equal(detail.at(-1), 'line 99');
  });

  it('shortens a long section to 40 lines and says how many it left out', () => {
    const output = ['✖ failing tests:', ...Array.from({ length: 50 }, (_, i) => `detail ${i}`)].join('\n');
    const detail = failureDetail(output).split('\n');
    assert.equal(detail.length, 41);
    assert.equal(detail[39], 'detail 39');
    assert.match(detail[40] as string, /10 more lines/);
  });
});
