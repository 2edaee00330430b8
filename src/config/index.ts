/** Configuration: the schema (and the types derived from it), loading, checks and queue limits. */
export { loadConfig, PACKAGE_ROOT, redacted, type LoadOptions } from './load.ts';
export { connectionBudget, effectiveQueueLimits, type ConnectionBudget, type QueueLimits } from './limits.ts';
export { QUEUE_DEFAULTS, type QueueSettings, type Schedule, type Settings } from './schema.ts';
