/**
 * How a per-key queue's claims look for jobs without a key (keyless_reads.ts):
 * a window, every due job after a window that may hide some, and no window for
 * KEYLESS_QUIET_MS after one full of keyed work.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KEYLESS_FULL_MIN_MS, KEYLESS_QUIET_MS, KeylessReads } from '../../src/supervisor/claim/keyless_reads.ts';

const FULL_OF_KEYED = { keylessHidden: true, took: 50, tookKeyless: false };
const NOT_FULL = { keylessHidden: false, took: 50, tookKeyless: false };

describe('keyless reads', () => {
  it('reads a window while windows are not full', () => {
    const reads = new KeylessReads();
    assert.equal(reads.scan(0), 'window');
    reads.observe('window', NOT_FULL, 0, 5);
    assert.equal(reads.scan(6), 'window');
  });

  it('after a window full of keyed work: every due job once, then no window until the quiet ends', () => {
    const reads = new KeylessReads();
    reads.observe('window', FULL_OF_KEYED, 0, 5);
    assert.equal(reads.scan(6), 'all', 'jobs without a key may lie beyond: read them all');
    reads.observe('all', NOT_FULL, 6, 16);
    assert.equal(reads.scan(17), 'none', 'the head is keyed work: no window');
    // A claim that read none reports that some may lie beyond; the full read waits its gap.
    reads.observe('none', FULL_OF_KEYED, 17, 20);
    assert.equal(reads.scan(5 + KEYLESS_QUIET_MS - 1), 'none');
    assert.equal(reads.scan(5 + KEYLESS_QUIET_MS), 'window', 'the quiet ends: a window again');
    assert.equal(reads.scan(16 + KEYLESS_FULL_MIN_MS), 'all', 'and every due job once the gap has passed');
  });

  it('the full reads are spaced by 20 × their duration when that is longer than a second', () => {
    const reads = new KeylessReads();
    reads.observe('window', FULL_OF_KEYED, 0, 5);
    assert.equal(reads.scan(6), 'all');
    reads.observe('all', NOT_FULL, 6, 106);
    reads.observe('window', FULL_OF_KEYED, 2000, 2010);
    assert.equal(reads.scan(106 + 20 * 100 - 1), 'none');
    assert.equal(reads.scan(106 + 20 * 100), 'all');
  });

  it('a claim that took a job without a key ends the quiet', () => {
    const reads = new KeylessReads();
    reads.observe('window', FULL_OF_KEYED, 0, 5);
    reads.observe('all', { keylessHidden: false, took: 1, tookKeyless: true }, 6, 16);
    assert.equal(reads.scan(17), 'window');
  });

  it('a full window from which the claim took a job without a key starts no quiet', () => {
    const reads = new KeylessReads();
    reads.observe('window', { keylessHidden: true, took: 5, tookKeyless: true }, 0, 5);
    reads.observe('all', NOT_FULL, 6, 16);
    assert.equal(reads.scan(17), 'window');
  });

  it('a claim without a window that took nothing ends the quiet: a job without a key may be all that is due', () => {
    const reads = new KeylessReads();
    reads.observe('window', FULL_OF_KEYED, 0, 5);
    reads.observe('all', NOT_FULL, 6, 16);
    assert.equal(reads.scan(17), 'none');
    reads.observe('none', { keylessHidden: true, took: 0, tookKeyless: false }, 17, 20);
    assert.equal(reads.scan(21), 'window');
  });
});
