/**
 * Where a supervisor's tasks come from, in the loader's order (worker/loader.ts):
 * the app's map (run({ tasks })), tasks.dir, then the built-in tasks that config
 * `tasks.builtins` enables. Nothing else: a job of a kind found in none of them
 * fails with TaskLoadError, and is never run by a task of another source.
 */
import { builtinTaskFiles } from '../../builtins.ts';
import type { Settings } from '../../config/index.ts';
import type { TaskSources } from '../../worker/loader.ts';

/** The task sources of `settings`, with the app's map `taskFiles` (kind → absolute path). */
export function taskSources(settings: Settings, taskFiles: Readonly<Record<string, string>>): TaskSources {
  return {
    files: taskFiles,
    dirs: settings.tasks.dir ? [settings.tasks.dir] : [],
    builtins: builtinTaskFiles(settings.tasks.builtins),
  };
}
