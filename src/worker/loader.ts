/**
 * Finds and loads the task module for a kind, once per thread.
 *
 * Look-up order: the app's map of kind → file (`run({ tasks })`), then the
 * app's folder (`tasks.dir`) as `<kind>.js`, `<kind>.mjs`, `<kind>.cjs`,
 * `<kind>.ts`, then the built-in tasks the configuration enables (config
 * `tasks.builtins`; none by default). A task of the same name as a built-in
 * replaces it. A kind found nowhere is a TaskLoadError: never another task. A module is imported by its own file URL, so
 * it resolves its imports (the app's modules, the app's dependencies) from
 * where it lives. A `.ts` file needs a TypeScript loader: one already active
 * (tsx preloaded, Node's own type stripping: on by default from Node 22.18
 * and 23.6), else the app's tsx (or jobvisor's, in a checkout), registered in
 * the thread on first need. What type stripping cannot load (syntax it does
 * not erase such as `enum`, an import written `./x.js` for `./x.ts`, a file
 * under node_modules) goes to the app's tsx too when it has one.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { isBuiltinTask } from '../builtins.ts';
import { NAME as KIND } from '../names.ts';
import type { Task } from './types.ts';
import { messageOf } from '../errors.ts';

const EXTENSIONS = ['.js', '.mjs', '.cjs', '.ts'];

/** Where tasks come from: files by kind, then folders (earlier wins). A plain list is folders only. */
export type TaskPlaces = readonly string[] | TaskSources;

export interface TaskSources {
  /** Kind → absolute path of its module. */
  files: Readonly<Record<string, string>>;
  dirs: readonly string[];
  /** The built-in tasks enabled (kind → module), looked up after the folders. */
  builtins?: Readonly<Record<string, string>>;
}

export function sourcesOf(places: TaskPlaces): TaskSources {
  return 'files' in places ? places : { files: {}, dirs: places };
}

/** Why a module could not be loaded: a stable code, for start-up checks. */
export type TaskLoadReason = 'missing' | 'no-ts-loader' | 'import-failed' | 'no-default-export';

/** A task error that no retry can fix (set on errors crossing to the supervisor). */
export class TaskLoadError extends Error {
  constructor(
    message: string,
    readonly permanent: boolean,
    options?: { cause?: unknown; reason?: TaskLoadReason },
  ) {
    super(message, options);
    this.name = 'TaskLoadError';
    this.reason = options?.reason ?? 'import-failed';
  }
  readonly reason: TaskLoadReason;
}

export function isValidKind(kind: string): boolean {
  return KIND.test(kind);
}

/**
 * The module file of a task kind: its mapped file, else the first of the
 * folders with `<kind>.{js,mjs,cjs,ts}`, else its built-in if enabled.
 */
export function findTaskFile(places: TaskPlaces, kind: string): string | undefined {
  const { files, dirs, builtins = {} } = sourcesOf(places);
  if (Object.hasOwn(files, kind)) return files[kind];
  for (const dir of dirs) {
    for (const ext of EXTENSIONS) {
      const file = path.join(dir, kind + ext);
      if (existsSync(file)) return file;
    }
  }
  return Object.hasOwn(builtins, kind) ? builtins[kind] : undefined;
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
 * Registers tsx in this thread, resolved from the task's folder: the app's own
 * tsx, as any of the app's dependencies (jobvisor does not ship one). Its
 * CommonJS hooks too, as `--import tsx` registers both: to tsx, a .ts file in
 * a folder without `"type": "module"` is CommonJS, compiled for require(), and
 * without those hooks Node.js ≥ 20.19 require()s it as the ES module its
 * syntax says it is, and fails ("Cannot require() ES Module … not yet fully
 * loaded"). A tsx without `tsx/cjs/api` (before 4) still serves ES module folders.
 */
function registerTsx(file: string): Promise<void> {
  tsxReady ??= (async () => {
    const api = (await import(pathToFileURL(tsxEsmApi(file)).href)) as { register: () => unknown };
    api.register();
    let cjs: { register: () => unknown } | undefined;
    try {
      cjs = createRequire(path.resolve(file))('tsx/cjs/api') as { register: () => unknown };
    } catch {
      // tsx before 4: its ES module hooks alone
    }
    cjs?.register();
  })();
  return tsxReady;
}

/**
 * The ES module build of `tsx/esm/api` as seen from `file`. createRequire
 * resolves with the `require` condition, and the CommonJS build registers hooks
 * that cannot be found from a worker thread; the package's own exports map
 * names the ES module build.
 */
function tsxEsmApi(file: string): string {
  // Absolute: a tasks.dir given relative to the working directory names relative files.
  const required = createRequire(path.resolve(file)).resolve('tsx/esm/api');
  for (let dir = path.dirname(required); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const manifest = path.join(dir, 'package.json');
    if (!existsSync(manifest)) continue;
    const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as {
      name?: string;
      exports?: Record<string, { import?: string | { default?: string } }>;
    };
    if (pkg.name !== 'tsx') continue;
    const entry = pkg.exports?.['./esm/api']?.import;
    const target = typeof entry === 'string' ? entry : entry?.default;
    if (target) return path.join(dir, target);
    break;
  }
  return required;
}

/** A TypeScript file by its extension. */
const TYPESCRIPT = /\.[cm]?tsx?$/;
/**
 * Node's own failures on a TypeScript file that tsx may not have: type
 * stripping off or absent, syntax it does not erase, a file under
 * node_modules, an import of `./x.js` that means `./x.ts`.
 */
const NOT_STRIPPABLE = new Set([
  'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX',
  'ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING',
  'ERR_MODULE_NOT_FOUND',
]);

/** Whether this Node.js strips types itself (`process.features.typescript`: 'strip' or 'transform'). */
const STRIPS_TYPES = Boolean((process.features as { typescript?: unknown }).typescript);

/** Whether tsx may load what Node's own import of `file` failed on with `err`. */
function tsxMayLoad(file: string, err: unknown): boolean {
  const code = (err as { code?: string } | undefined)?.code ?? '';
  return code === 'ERR_UNKNOWN_FILE_EXTENSION' || (STRIPS_TYPES && TYPESCRIPT.test(file) && NOT_STRIPPABLE.has(code));
}

/**
 * Imports a task module (bringing tsx in once for a .ts file that no active
 * TypeScript loader could load). @throws TaskLoadError when it cannot be loaded.
 */
export async function importTaskModule(file: string): Promise<Record<string, unknown>> {
  const url = pathToFileURL(file).href;
  let native: unknown;
  try {
    return (await import(url)) as Record<string, unknown>;
  } catch (err) {
    if (!tsxMayLoad(file, err)) throw loadFailed(file, err);
    native = err;
  }
  try {
    await registerTsx(file);
  } catch (cause) {
    tsxReady = undefined;
    // Node's type stripping read the file: its own error says what it could not do.
    if ((native as { code?: string }).code !== 'ERR_UNKNOWN_FILE_EXTENSION')
      throw loadFailed(
        file,
        native,
        " (Node.js's type stripping runs the file as written: erasable syntax only, other .ts files imported as .ts; install tsx in the app for more)",
      );
    throw new TaskLoadError(
      `task ${file} is TypeScript but no TypeScript loader is available: install tsx in the app, compile it to .js, or run on Node.js ≥ 22.18 (which strips types itself)`,
      false,
      { cause, reason: 'no-ts-loader' },
    );
  }
  // Node keeps the failed import of `url` in its module map: a new URL loads the file afresh, through tsx.
  try {
    return (await import(`${url}?ts`)) as Record<string, unknown>;
  } catch (err) {
    throw loadFailed(file, err);
  }
}

/** What Node.js says when it reads ES module syntax as CommonJS (a folder whose package.json says so). */
const ESM_AS_COMMONJS = /Cannot use import statement outside a module|Unexpected token 'export'/;

function loadFailed(file: string, err: unknown, why = ''): TaskLoadError {
  // Only for that error: a task that throws while it loads gets its own message alone.
  const hint =
    file.endsWith('.js') && err instanceof SyntaxError && ESM_AS_COMMONJS.test(err.message)
      ? ' (an ES module task needs the .mjs extension or a package.json with "type": "module" in its folder)'
      : why;
  return new TaskLoadError(`task ${file} could not be loaded: ${messageOf(err)}${hint}`, false, {
    cause: err,
    reason: 'import-failed',
  });
}

/** A module's task function: its default export (a CommonJS module's `module.exports` or `exports.default`). */
export function taskOf(mod: Record<string, unknown>): Task | undefined {
  const d = mod.default;
  if (typeof d === 'function') return d as Task;
  const inner = (d as { default?: unknown } | undefined)?.default;
  return typeof inner === 'function' ? (inner as Task) : undefined;
}

/**
 * Loads one kind's task. @throws TaskLoadError when missing, invalid or not
 * loadable; never permanent for a missing one (during a rolling deploy the new
 * task may exist on a newer supervisor).
 */
export async function loadTask(places: TaskPlaces, kind: string): Promise<Task> {
  if (!KIND.test(kind)) throw new TaskLoadError(`kind ${JSON.stringify(kind)} is not a valid task name`, true);
  const file = findTaskFile(places, kind);
  if (!file) throw new TaskLoadError(missingTask(places, kind), false, { reason: 'missing' });
  const task = taskOf(await importTaskModule(file));
  if (!task)
    throw new TaskLoadError(`task ${file} has no default export function`, false, { reason: 'no-default-export' });
  return task;
}

/** Why no task runs `kind`: where it was looked for, and how to enable it when it is a built-in. */
export function missingTask(places: TaskPlaces, kind: string): string {
  const { files, dirs, builtins = {} } = sourcesOf(places);
  const where = [
    ...(Object.keys(files).length ? ['the tasks map'] : []),
    ...dirs.map((dir) => `${dir}/${kind}{${EXTENSIONS.join(',')}}`),
    ...(Object.keys(builtins).length ? [`the built-in tasks enabled (${Object.keys(builtins).join(', ')})`] : []),
  ];
  const looked = where.length ? `looked in ${where.join(', ')}` : 'this supervisor has no tasks';
  const hint = isBuiltinTask(kind)
    ? `; ${kind} is one of jobvisor's built-in tasks, which run only where enabled: config tasks.builtins, or builtinTask('${kind}') in run({ tasks })`
    : '';
  return `no task for kind "${kind}" (${looked})${hint}`;
}

export function createLoader(places: TaskPlaces) {
  const cache = new Map<string, Promise<Task>>();
  const ready = new Map<string, Task>();

  async function load(kind: string): Promise<Task> {
    const task = await loadTask(places, kind);
    ready.set(kind, task);
    return task;
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
