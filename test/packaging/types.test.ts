/**
 * The types an app gets, checked as the app's own compiler would check them
 * (test/fixtures/types/, compiled against src/ here and against the packed
 * package in test/packaging/package.test.ts):
 *   - with a registry (jobs.ts declares kinds in TaskPayloads, among them its
 *     own welcome_email), every right use in usage.ts compiles and every
 *     `@ts-expect-error` there is an error; each mistyped kind of typo.ts is
 *     the error marked on its line, and nothing else is;
 *   - without one (untyped.ts alone), any kind takes any payload.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { checkFixtures, markedErrors } from '../helpers/type_errors.ts';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/types');

describe('the types of an app', () => {
  it('with a registry: declared kinds are checked, a mistyped kind is an error, the app types its own welcome_email', () => {
    const files = ['jobs.ts', 'usage.ts', 'typo.ts'];
    const { errors, text } = checkFixtures(FIXTURES, files);
    assert.deepEqual(errors, markedErrors(FIXTURES, files), text);
    assert.match(
      text,
      /TS2345: Argument of type '"welcom_email"' is not assignable to parameter of type '[^']*KnownKind/,
    );
    assert.match(text, /TS2820: Type '"send_invoce"' is not assignable .* Did you mean '"send_invoice"'\?/);
  });

  it('without a registry: any kind, any payload; a defineJob handle still types its own', () => {
    const { errors, text } = checkFixtures(FIXTURES, ['untyped.ts']);
    assert.deepEqual(errors, [], text);
  });

  it("steps take their fn's type, a declared signal its payload type", () => {
    const { errors, text } = checkFixtures(FIXTURES, ['steps.ts']);
    assert.deepEqual(errors, markedErrors(FIXTURES, ['steps.ts']), text);
  });
});
