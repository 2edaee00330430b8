/**
 * The `tasks` configuration section: where a supervisor's tasks come from
 * besides the ones an app maps in `run({ tasks })`. `dir` is the app's folder;
 * `builtins` names the built-in tasks it runs too (none unless listed: see
 * src/builtins.ts).
 */
import convict from 'convict';
import { notBuiltin } from '../builtins.ts';

/** The convict format of `tasks.builtins`: a list of built-in kinds; comma-separated in the environment. */
export const BUILTIN_LIST = 'jobvisor-builtin-tasks';
convict.addFormat({
  name: BUILTIN_LIST,
  validate: (value: unknown) => {
    if (!Array.isArray(value)) throw new Error(`must be a list of built-in task kinds, got ${JSON.stringify(value)}`);
    for (const kind of value) {
      const problem = notBuiltin(kind);
      if (problem !== undefined) throw new Error(problem);
    }
  },
  coerce: (v: unknown) =>
    typeof v === 'string'
      ? v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : v,
});

export const tasksSchema = {
  dir: {
    doc: 'Folder of user tasks: one <kind>.js or <kind>.ts file per kind.',
    format: String,
    default: '',
    env: 'JOBVISOR_TASKS_DIR',
  },
  builtins: {
    doc: "jobvisor's built-in tasks this supervisor runs too: daily_report, thumbnail, welcome_email (none unless listed; comma-separated in the environment).",
    format: BUILTIN_LIST,
    default: [] as string[],
    env: 'JOBVISOR_BUILTIN_TASKS',
  },
};
