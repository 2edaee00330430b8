/** The type of a loaded configuration, derived from the schema's tree. */
import type { schema } from './schema.ts';
import type { QueueSettings, Schedule } from './sections.ts';

/** A schema node's loaded value: durations in ms, sections recursively. */
type Resolved<S> = S extends { duration: true }
  ? number
  : S extends { default: infer D }
    ? D
    : { -readonly [K in keyof S]: Resolved<S[K]> };

/**
 * The loaded, validated configuration (loadConfig's result): every section of
 * the schema with defaults filled in and durations in milliseconds, the queues
 * with their derived limits, and the schedules.
 */
export type Settings = Omit<Resolved<typeof schema>, 'queues' | 'schedules'> & {
  queues: Record<string, QueueSettings>;
  schedules: Schedule[];
};
