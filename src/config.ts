/**
 * The configuration: a strict convict schema and its layered loading. It is
 * split by concern under ./config/ (schema.ts, load.ts, validate.ts, limits.ts,
 * sections.ts, dashboard.ts); this module is the entry point the layout names.
 */
export * from './config/index.ts';
