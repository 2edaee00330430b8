/**
 * The log destination's rules, driven through its write function: a full fd
 * (EAGAIN) never blocks, lines stay whole and in order across partial writes,
 * lines beyond the buffer are dropped, counted and reported once output moves
 * again, the exit flush is bounded, and a reader that is gone (EPIPE) only
 * costs lines. The real-process scenario is test/system/chaos_log_stall.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogStream } from '../../src/log_stream.ts';

/** A reader that takes up to `room` bytes per write, or nothing (EAGAIN) while `room` is 0. */
function reader() {
  const out: Buffer[] = [];
  const r = {
    room: Infinity,
    gone: false,
    text: () => Buffer.concat(out).toString('utf8'),
    write: (_fd: number, data: Buffer) => {
      if (r.gone) throw Object.assign(new Error('EPIPE'), { code: 'EPIPE' });
      if (r.room <= 0) throw Object.assign(new Error('EAGAIN'), { code: 'EAGAIN' });
      const n = Math.min(r.room, data.length);
      out.push(Buffer.from(data.subarray(0, n)));
      return n;
    },
  };
  return r;
}

const line = (i: number, size = 100) => `${JSON.stringify({ i, pad: 'x'.repeat(size) })}\n`;

describe('log stream', () => {
  it('writes at once while the reader takes it', () => {
    const r = reader();
    const s = createLogStream({ fd: 1, maxBytes: 1000, write: r.write });
    s.write(line(1));
    s.write(line(2));
    assert.equal(r.text(), line(1) + line(2));
  });

  it('holds lines while the fd is full, drops beyond the bound, and says so once the reader is back', () => {
    const r = reader();
    const resumed: number[] = [];
    const s = createLogStream({ fd: 1, maxBytes: 1000, write: r.write, onResume: (n) => resumed.push(n) });
    r.room = 0;
    const t = Date.now();
    for (let i = 0; i < 50; i++) s.write(line(i));
    assert.ok(Date.now() - t < 100, 'writes never wait for the reader');
    const held = Math.floor(1000 / line(0).length);
    assert.equal(s.dropped, 50 - held);
    r.room = Infinity;
    assert.equal(s.flushSync(1000), true);
    assert.equal(
      r.text(),
      Array.from({ length: held }, (_, i) => line(i)).join(''),
      'the first lines, whole, in order',
    );
    assert.deepEqual(resumed, [50 - held]);
  });

  it('keeps lines whole and in order across partial writes', () => {
    const r = reader();
    const s = createLogStream({ fd: 1, maxBytes: 1 << 20, write: r.write });
    r.room = 0;
    const lines = Array.from({ length: 40 }, (_, i) => line(i, i * 300));
    for (const l of lines) s.write(l);
    r.room = 777; // every write takes part of what it is given
    assert.equal(s.flushSync(5000), true);
    assert.equal(r.text(), lines.join(''));
  });

  it('bounds the exit flush while the reader is stalled', () => {
    const r = reader();
    const s = createLogStream({ fd: 1, maxBytes: 1000, write: r.write });
    r.room = 0;
    s.write(line(1));
    const t = Date.now();
    assert.equal(s.flushSync(150), false);
    const waited = Date.now() - t;
    assert.ok(waited >= 140 && waited < 1000, `waited ${waited} ms`);
  });

  it('drops, without throwing, once the reader is gone', () => {
    const r = reader();
    const s = createLogStream({ fd: 1, maxBytes: 1000, write: r.write });
    r.gone = true;
    s.write(line(1));
    s.write(line(2));
    assert.equal(s.dropped, 2);
    assert.equal(s.flushSync(100), true);
  });
});
