/**
 * jobvisor's built-in tasks (src/tasks/): the demo's `welcome_email`, and
 * `thumbnail` and `daily_report`. They are opt-in: a supervisor runs one only
 * when it is asked to, by config `tasks.builtins` (the repository's own
 * config/demo.json lists all three) or by mapping it in `run({ tasks })` with
 * builtinTask(kind). An app that asked for none never runs one, whatever
 * kinds its jobs name.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from './errors.ts';
import { closestKey } from './suggest.ts';

/** The built-in tasks' kinds. */
export const BUILTIN_TASKS = ['daily_report', 'thumbnail', 'welcome_email'] as const;

/** The kind of one of jobvisor's built-in tasks. */
export type BuiltinTaskKind = (typeof BUILTIN_TASKS)[number];

/** The folder of the built-in task modules: src/tasks from sources, dist/tasks in the package. */
export const BUILTIN_TASKS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'tasks');

export function isBuiltinTask(kind: string): kind is BuiltinTaskKind {
  return (BUILTIN_TASKS as readonly string[]).includes(kind);
}

/**
 * The module of a built-in task, for `run({ tasks: { thumbnail: builtinTask('thumbnail') } })`.
 * @throws ConfigError for a kind that is not a built-in task (naming the nearest).
 */
export function builtinTask(kind: BuiltinTaskKind): string {
  const problem = notBuiltin(kind);
  if (problem !== undefined) throw new ConfigError(`invalid configuration: builtinTask(): ${problem}`);
  const compiled = path.join(BUILTIN_TASKS_DIR, `${kind}.js`);
  return existsSync(compiled) ? compiled : path.join(BUILTIN_TASKS_DIR, `${kind}.ts`);
}

/** The modules of the built-in tasks `kinds` (config `tasks.builtins`), by kind. */
export function builtinTaskFiles(kinds: readonly string[]): Record<string, string> {
  return Object.fromEntries(kinds.map((kind) => [kind, builtinTask(kind as BuiltinTaskKind)]));
}

/** Why `kind` is not a built-in task (with the nearest one and the list), or undefined when it is one. */
export function notBuiltin(kind: unknown): string | undefined {
  if (typeof kind === 'string' && isBuiltinTask(kind)) return undefined;
  const near = typeof kind === 'string' ? closestKey(kind, BUILTIN_TASKS) : undefined;
  return `${JSON.stringify(kind)} is not a built-in task${near ? ` (did you mean "${near}"?)` : ''}; the built-in tasks are ${BUILTIN_TASKS.join(', ')}`;
}
