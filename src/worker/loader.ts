/**
 * Finds and loads the task module for a kind, once per thread.
 *
 * Look-up order: the user's folder (`tasks.dir`), then the built-in tasks, each
 * as `<kind>.js`, `<kind>.mjs`, `<kind>.ts`. A user task of the same name as a
 * built-in replaces it. `.ts` files need tsx: present in development, absent
 * from the production image (compile your tasks there).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Task } from './types.ts';

const KIND = /^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,199}$/;
const EXTENSIONS = ['.js', '.mjs', '.ts'];

/** A task error that no retry can fix (set on errors crossing to the supervisor). */
export class TaskLoadError extends Error {
  constructor(
    message: string,
    readonly permanent: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'TaskLoadError';
  }
}

/** The module file of a task kind: the first of dirs that has `<kind>.{js,mjs,ts}`. */
export function findTaskFile(dirs: readonly string[], kind: string): string | undefined {
  for (const dir of dirs) {
    for (const ext of EXTENSIONS) {
      const file = path.join(dir, kind + ext);
      if (existsSync(file)) return file;
    }
  }
  return undefined;
}

/** The kind a file in a tasks folder defines, or undefined if it defines none. */
export function kindOfFile(name: string): string | undefined {
  if (name.endsWith('.d.ts')) return undefined;
  const ext = EXTENSIONS.find((e) => name.endsWith(e));
  const kind = ext ? name.slice(0, -ext.length) : undefined;
  return kind !== undefined && KIND.test(kind) ? kind : undefined;
}

let tsxReady: Promise<void> | undefined;

/**
 * Imports a task module (bringing tsx in once for a .ts file where no
 * TypeScript loader is active). @throws TaskLoadError when it cannot be loaded.
 */
export async function importTaskModule(file: string): Promise<Record<string, unknown>> {
  const url = pathToFileURL(file).href;
  try {
    return (await import(url)) as Record<string, unknown>;
  } catch (err) {
    if ((err as { code?: string }).code !== 'ERR_UNKNOWN_FILE_EXTENSION') {
      const hint = file.endsWith('.js')
        ? ' (an ES module task needs the .mjs extension or a package.json with "type": "module" in its folder)'
        : '';
      throw new TaskLoadError(`task ${file} could not be loaded: ${(err as Error).message}${hint}`, false, {
        cause: err,
      });
    }
  }
  tsxReady ??= import('tsx/esm/api').then(
    (m) => void m.register(),
    (cause) => {
      throw new TaskLoadError(`task ${file} is TypeScript but tsx is not installed: compile it to .js`, false, {
        cause,
      });
    },
  );
  await tsxReady;
  return (await import(url)) as Record<string, unknown>;
}

export function createLoader(dirs: string[]) {
  const cache = new Map<string, Promise<Task>>();
  const ready = new Map<string, Task>();

  async function load(kind: string): Promise<Task> {
    if (!KIND.test(kind)) throw new TaskLoadError(`kind ${JSON.stringify(kind)} is not a valid task name`, true);
    const file = findTaskFile(dirs, kind);
    if (!file) {
      // Not permanent: during a rolling deploy the new task may exist on a newer supervisor.
      throw new TaskLoadError(
        `no task for kind "${kind}" (looked for ${kind}{${EXTENSIONS.join(',')}} in ${dirs.join(', ')})`,
        false,
      );
    }
    const mod = await importTaskModule(file);
    if (typeof mod.default !== 'function')
      throw new TaskLoadError(`task ${file} has no default export function`, false);
    ready.set(kind, mod.default as Task);
    return mod.default as Task;
  }

  return {
    /** The task for `kind` if it is already loaded (no promise on the hot path). */
    loaded(kind: string): Task | undefined {
      return ready.get(kind);
    },
    /** The task for `kind`. @throws TaskLoadError when missing, invalid or not loadable. */
    get(kind: string): Promise<Task> {
      let task = cache.get(kind);
      if (!task) {
        task = load(kind);
        // A failed load is retried on the next job rather than cached forever.
        task.catch(() => cache.delete(kind));
        cache.set(kind, task);
      }
      return task;
    },
  };
}
