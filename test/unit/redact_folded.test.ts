/**
 * redactFoldedJson: the values of secret keys in a step's folded result are
 * hidden, whole or cut, at any depth, and nothing else changes.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { redactFoldedJson } from '../../src/dashboard/redact_folded.ts';
import { redactPayload } from '../../src/dashboard/redact.ts';
import { secretKeyNames, SECRET_KEYS } from '../../src/secrets.ts';

const KEYS = secretKeyNames(SECRET_KEYS);
const R = '"[redacted]"';

describe('redactFoldedJson', () => {
  it('hides what redactPayload hides in a whole text, and changes nothing else', () => {
    const values = [
      { id: 'ch_1', token: 'abc', nested: { apiKey: { deep: [1, 2] }, ok: 'x' } },
      [{ Password: 'p', list: ['token', 'password'] }, 'password', { 'api-key': null }],
      { a: 'quote \\" and : and , inside', secret: 'a "quoted" \\ value', b: [true, false, 3.5e-7] },
      'token',
      42,
      null,
    ];
    for (const v of values) {
      // Both compact and jsonb's spacing.
      for (const text of [JSON.stringify(v), JSON.stringify(v, null, 1)]) {
        const out = redactFoldedJson(text, KEYS);
        assert.deepEqual(JSON.parse(out), redactPayload(v, KEYS), text);
      }
    }
  });

  it('hides a secret value the fold cut, whatever its shape, and keeps the fold mark', () => {
    assert.equal(redactFoldedJson('{"a": 1, "token": "abc…', KEYS), `{"a": 1, "token":${R}…`);
    assert.equal(redactFoldedJson('{"token": {"x": [1, "}]"…', KEYS), `{"token":${R}…`);
    assert.equal(redactFoldedJson('[{"password": 12345…', KEYS), `[{"password":${R}…`);
    assert.equal(redactFoldedJson('{"password":…', KEYS), `{"password":${R}…`);
    assert.equal(redactFoldedJson('{"passw…', KEYS), '{"passw…');
    assert.equal(redactFoldedJson('{"a": "tok…', KEYS), '{"a": "tok…', 'a value named like a key is a value');
    assert.equal(redactFoldedJson('{"a": "x\\"…', KEYS), '{"a": "x\\"…');
  });
});
