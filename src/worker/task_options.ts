/**
 * Task options: what a task module declares about itself with
 * `export const options = { exclusiveThread, queue, timeout, batch }` (see types.ts).
 *
 * They are read by importing the module once in the reading process: the
 * supervisor reads a kind when its first job arrives (the dispatcher must know
 * a kind is exclusive before it places a job of it) and every kind shortly
 * after start (supervisor/build/task_catalog.ts); `jobvisor enqueue` reads the one
 * kind it enqueues. A module that cannot be
 * loaded or declares bad options is reported through `onProblem` and treated
 * as declaring nothing: its jobs still run (and fail) as they always did.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { parseDuration } from '../duration.ts';
import { checkQueue } from '../names.ts';
import { parseBatchOptions, type ResolvedBatch } from './batch_options.ts';
import { findTaskFile, importTaskModule, kindOfFile, sourcesOf, type TaskPlaces } from './loader.ts';
import { messageOf } from '../errors.ts';

/** Task options, checked and with the timeout in ms. */
export interface ResolvedTaskOptions {
  exclusiveThread: boolean;
  queue?: string;
  timeoutMs?: number;
  /** A batch task: its calls' size, wait and key (batch_options.ts). */
  batch?: ResolvedBatch;
}

const KEYS = new Set(['exclusiveThread', 'queue', 'timeout', 'batch']);

/**
 * Checks a module's `options` export.
 * @throws Error naming the file and the bad key.
 */
export function parseTaskOptions(file: string, value: unknown): ResolvedTaskOptions {
  const where = `task ${file}: export const options`;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new Error(`${where} must be an object such as { exclusiveThread: true, queue: 'cpu', timeout: '10m' }`);
  const o = value as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    if (!KEYS.has(key))
      throw new Error(`${where}: unknown key ${JSON.stringify(key)} (known: ${[...KEYS].join(', ')})`);
  }
  if (o.exclusiveThread !== undefined && typeof o.exclusiveThread !== 'boolean')
    throw new Error(`${where}.exclusiveThread must be true or false`);
  const resolved: ResolvedTaskOptions = { exclusiveThread: o.exclusiveThread === true };
  if (o.queue !== undefined) {
    try {
      checkQueue('queue', o.queue);
    } catch (err) {
      throw new Error(`${where}.${messageOf(err)}`, { cause: err });
    }
    resolved.queue = o.queue;
  }
  if (o.timeout !== undefined) {
    try {
      if (typeof o.timeout !== 'string' && typeof o.timeout !== 'number') throw new Error('is not a duration');
      resolved.timeoutMs = parseDuration(o.timeout);
    } catch (err) {
      throw new Error(`${where}.timeout ${messageOf(err)}`, { cause: err });
    }
    if (resolved.timeoutMs === 0) throw new Error(`${where}.timeout must be more than 0`);
  }
  if (o.batch !== undefined) resolved.batch = parseBatchOptions(`${where}.batch`, o.batch);
  return resolved;
}

/** One kind's options (null: none declared, or unreadable) and what could not be read. */
export interface OptionsRead {
  options: ResolvedTaskOptions | null;
  problems: string[];
}

/** Reads one kind's options, collecting what cannot be read as problems; never rejects. */
export async function readOptionsOf(dirs: TaskPlaces, kind: string): Promise<OptionsRead> {
  const problems: string[] = [];
  try {
    // readTaskOptions reports a module it cannot read and resolves undefined.
    const options = await readTaskOptions(dirs, kind, (problem) => problems.push(problem));
    return { options: options ?? null, problems };
  } catch (err) {
    problems.push(`task ${kind}: ${String(err)}; its options are ignored`);
    return { options: null, problems };
  }
}

/** The options of one kind, or undefined when its module declares none (or cannot be read). */
export async function readTaskOptions(
  dirs: TaskPlaces,
  kind: string,
  onProblem: (message: string) => void,
): Promise<ResolvedTaskOptions | undefined> {
  const file = findTaskFile(dirs, kind);
  if (!file) return undefined;
  try {
    const mod = await importTaskModule(file);
    // `export const options`, or the options given to defineTask (on the default export).
    const options = mod.options ?? (mod.default as { options?: unknown } | undefined)?.options;
    return options === undefined ? undefined : parseTaskOptions(file, options);
  } catch (err) {
    onProblem(`${messageOf(err)}; its options are ignored`);
    return undefined;
  }
}

/** Every kind with a module in `places` (mapped, in a folder, or an enabled built-in), sorted. */
export async function listTaskKinds(places: TaskPlaces): Promise<string[]> {
  const { files, dirs, builtins = {} } = sourcesOf(places);
  const kinds = new Set<string>([...Object.keys(files), ...Object.keys(builtins)]);
  for (const dir of dirs) {
    const names = await readdir(dir).catch(() => [] as string[]);
    for (const name of names) {
      const kind = kindOfFile(path.basename(name));
      if (kind !== undefined) kinds.add(kind);
    }
  }
  return [...kinds].sort();
}

/**
 * The options of every task in `dirs` (earlier folders win, as in the loader),
 * by kind; kinds that declare none are absent. `read` reads one kind (default:
 * readTaskOptions; the supervisor passes its catalog's, which reads each once).
 */
export async function discoverTaskOptions(
  dirs: TaskPlaces,
  onProblem: (message: string) => void,
  read: (kind: string) => Promise<ResolvedTaskOptions | null | undefined> = (kind) =>
    readTaskOptions(dirs, kind, onProblem),
): Promise<Map<string, ResolvedTaskOptions>> {
  const kinds = await listTaskKinds(dirs);
  const options = await Promise.all(kinds.map(read));
  const found = new Map<string, ResolvedTaskOptions>();
  kinds.forEach((kind, i) => {
    const o = options[i];
    if (o) found.set(kind, o);
  });
  return found;
}
