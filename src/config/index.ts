/** Configuration: the schema (and the types derived from it), loading, checks and queue limits. */
export { APP_CONFIG_FILES, appConfigFile, loadConfig, redacted, unreadConfigFiles, type LoadOptions } from './load.ts';
export { connectionBudget, effectiveQueueLimits, type ConnectionBudget, type QueueLimits } from './limits.ts';
export { QUEUE_DEFAULTS, type QueueSettings, type Schedule } from './schema.ts';
export type { Settings } from './settings.ts';
