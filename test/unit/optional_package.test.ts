/**
 * The built-in tasks' optional packages (sharp, pdfkit) are imported on first
 * use; a missing one dead-letters the job with one line naming it. The real
 * missing-package run is in test/packaging/package.test.ts (an app without sharp).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isMissing, optionalPackage } from '../../src/tasks/support/optional_package.ts';
import { PermanentError } from '../../src/worker/errors.ts';

describe('optional packages of the built-in tasks', () => {
  it('a package that is not installed is a PermanentError naming it, tried again next time', async () => {
    let calls = 0;
    const load = optionalPackage('jobvisor-no-such-package', 'thumbnail', () => {
      calls++;
      return import(['jobvisor-no-such-package'][0] as string);
    });
    for (let i = 0; i < 2; i++)
      await assert.rejects(load(), (err: unknown) => {
        assert.ok(err instanceof PermanentError);
        assert.equal(
          err.message,
          'the thumbnail task needs the optional package jobvisor-no-such-package, which is not installed: npm install jobvisor-no-such-package',
        );
        assert.equal(err.message.split('\n').length, 1);
        return true;
      });
    assert.equal(calls, 2, 'a failed import is not cached');
  });

  it('an installed package loads once; other import errors pass through', async () => {
    let calls = 0;
    const load = optionalPackage('pdfkit', 'daily_report', async () => {
      calls++;
      return (await import('pdfkit')).default;
    });
    assert.equal(typeof (await load()), 'function');
    await load();
    assert.equal(calls, 1);
    const broken = Object.assign(new Error("Cannot find package 'fontkit' imported from /x/pdfkit.js"), {
      code: 'ERR_MODULE_NOT_FOUND',
    });
    assert.equal(isMissing(broken, 'pdfkit'), false, "a dependency of the package missing is not 'install pdfkit'");
    await assert.rejects(optionalPackage('pdfkit', 'daily_report', () => Promise.reject(broken))(), broken);
  });

  it('the built-in task modules import without their optional packages', async () => {
    // Their options are read in a thread that imports the module: a top-level
    // import of sharp or pdfkit would fail there in an app without them.
    for (const file of ['thumbnail.ts', 'daily_report.ts', 'support/report_pdf.ts']) {
      const { readFile } = await import('node:fs/promises');
      const text = await readFile(new URL(`../../src/tasks/${file}`, import.meta.url), 'utf8');
      assert.doesNotMatch(text, /^import (?!type )[^\n]*from '(sharp|pdfkit)'/m, file);
    }
  });
});
