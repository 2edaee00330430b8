/**
 * Bounded label values. Anyone who can insert a row chooses its kind and queue:
 * used as labels directly, 5,000 distinct kinds made a 21 MB scrape with 235k
 * series. Labels are therefore the configured queues and the known task kinds
 * (the app's tasks map, files in its tasks folder, the built-in tasks enabled,
 * scheduled kinds); anything else is reported as `other`.
 */
import { readdirSync } from 'node:fs';
import { TASK_FILE } from '../names.ts';

export const OTHER = 'other';
/** Most kinds a task folder listing may contribute (a folder of thousands is not a label set). */
export const MAX_KNOWN_KINDS = 500;
const RELIST_MS = 30_000;

export interface LabelSet {
  queue(queue: string): string;
  kind(kind: string): string;
}

/** Kinds a folder provides: `<kind>.js|.mjs|.ts` files (not `.d.ts`). A missing folder provides none. */
export function taskKindsIn(dir: string): string[] {
  if (!dir) return [];
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isFile() && !e.name.endsWith('.d.ts'))
      .map((e) => TASK_FILE.exec(e.name)?.[1])
      .filter((k): k is string => k !== undefined);
  } catch {
    return [];
  }
}

/**
 * @param queues the configured queues
 * @param kinds the always-known kinds (mapped, built-in and scheduled kinds)
 * @param taskDirs folders listed (again at most every 30 s, so a deployed task appears) for more kinds
 */
export function createLabelSet(options: {
  queues: string[];
  kinds?: string[];
  taskDirs?: string[];
  now?: () => number;
}): LabelSet {
  const queues = new Set(options.queues);
  const now = options.now ?? Date.now;
  let known = new Set<string>();
  let listedAt = -Infinity;
  const relist = () => {
    const found = [...(options.kinds ?? []), ...(options.taskDirs ?? []).flatMap(taskKindsIn)];
    known = new Set(found.slice(0, MAX_KNOWN_KINDS));
    listedAt = now();
  };
  return {
    queue: (queue) => (queues.has(queue) ? queue : OTHER),
    kind: (kind) => {
      if (now() - listedAt > RELIST_MS) relist();
      return known.has(kind) ? kind : OTHER;
    },
  };
}

/** Every value is its own label: for tests and tools that read a known, small database. */
export const UNBOUNDED_LABELS: LabelSet = { queue: (q) => q, kind: (k) => k };
