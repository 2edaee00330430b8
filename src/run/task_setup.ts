/**
 * The app's tasks, checked before a supervisor claims anything: a missing
 * tasks folder, a kind mapped to a missing file, a module that cannot be
 * imported (it throws, has no default export function, or is TypeScript with
 * no loader to run it) stops start-up with one line naming it. Without this,
 * start said ready and every job of such a kind burned its attempts.
 *
 * Only the app's tasks are imported here (the map and tasks.dir); jobvisor's
 * built-in tasks load on their first job, as before.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, TaskSetupError } from '../errors.ts';
import type { TaskCheck } from '../worker/check_task.ts';
import { isValidKind } from '../worker/loader.ts';
import { listTaskKinds } from '../worker/task_options.ts';

/** A path or file URL (string or URL object) as an absolute path; relative paths are from `cwd`. */
export function toPath(value: string | URL, cwd: string): string {
  if (value instanceof URL) return fileURLToPath(value);
  if (value.startsWith('file:')) return fileURLToPath(value);
  return path.resolve(cwd, value);
}

/**
 * The `tasks` option as kind → absolute path.
 * @throws ConfigError for an invalid kind or a value that is not a path or URL.
 */
export function resolveTaskFiles(tasks: Record<string, unknown> | undefined, cwd: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const [kind, value] of Object.entries(tasks ?? {})) {
    if (!isValidKind(kind))
      throw new ConfigError(`invalid configuration: tasks: ${JSON.stringify(kind)} is not a valid task kind`);
    if (typeof value !== 'string' && !(value instanceof URL))
      throw new ConfigError(`invalid configuration: tasks.${kind} must be a module path or URL`);
    files[kind] = toPath(value, cwd);
  }
  return files;
}

/** What stat says a path is, or undefined when it does not exist. */
function kindOfPath(file: string): 'file' | 'dir' | undefined {
  try {
    return statSync(file).isDirectory() ? 'dir' : 'file';
  } catch {
    return undefined;
  }
}

/** The checks that need no import. @throws TaskSetupError naming the folder or file. */
export function checkTaskPaths(dir: string, files: Readonly<Record<string, string>>): void {
  if (dir && kindOfPath(dir) !== 'dir')
    throw new TaskSetupError(
      'TASKS_DIR_MISSING',
      `the tasks folder ${dir} (tasks.dir / JOBVISOR_TASKS_DIR) ${kindOfPath(dir) ? 'is not a folder' : 'does not exist'}`,
    );
  for (const [kind, file] of Object.entries(files)) {
    const found = kindOfPath(file);
    if (found !== 'file')
      throw new TaskSetupError(
        'TASK_FILE_MISSING',
        `task ${kind} is mapped to ${file}, which ${found ? 'is a folder (use tasksDir for a folder)' : 'does not exist'}`,
      );
  }
}

const CODES = {
  missing: 'TASK_FILE_MISSING',
  'no-ts-loader': 'TASK_NO_TS_LOADER',
  'import-failed': 'TASK_IMPORT_FAILED',
  'no-default-export': 'TASK_INVALID',
} as const;

/**
 * Imports every app task (through `check`, in the options thread); the first
 * failure, in kind order, is thrown.
 * @throws TaskSetupError naming the kind and the reason.
 */
export async function checkTaskModules(
  dir: string,
  files: Readonly<Record<string, string>>,
  check: (kind: string) => Promise<TaskCheck>,
): Promise<string[]> {
  const kinds = await listTaskKinds({ files, dirs: dir ? [dir] : [] });
  const results = await Promise.all(kinds.map(check));
  results.forEach((result, i) => {
    if (!result.ok) throw new TaskSetupError(CODES[result.reason], `task kind "${kinds[i]}": ${result.message}`);
  });
  return kinds;
}
