/**
 * The built-in tasks' optional packages (sharp for `thumbnail`, pdfkit for
 * `daily_report`): optional peer dependencies of jobvisor, so an app that never
 * runs those tasks never installs them. Each is imported on first use, once per
 * thread; a failed import is tried again by the next job (the package may have
 * been installed meanwhile).
 */
import { PermanentError } from '../../worker/errors.ts';

/**
 * `load()` (an `import()` of `name`), cached while it succeeds.
 * @throws PermanentError, one line naming the package to install, when `name`
 * itself is not installed (a job cannot fix that by retrying); any other import
 * error (a broken native binary, a missing dependency of the package) as it is.
 */
export function optionalPackage<T>(name: string, task: string, load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () => {
    loading ??= load().catch((err: unknown) => {
      loading = undefined;
      if (isMissing(err, name))
        throw new PermanentError(
          `the ${task} task needs the optional package ${name}, which is not installed: npm install ${name}`,
          { cause: err },
        );
      throw err;
    });
    return loading;
  };
}

/** Whether `err` says that package `name` itself cannot be found (not one of its own imports). */
export function isMissing(err: unknown, name: string): boolean {
  const { code, message } = (err ?? {}) as { code?: unknown; message?: unknown };
  if (code !== 'ERR_MODULE_NOT_FOUND' || typeof message !== 'string') return false;
  return message.startsWith(`Cannot find package '${name}'`);
}
