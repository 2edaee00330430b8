/** Kept so that older imports keep working: the configuration lives in ./config/. */
export * from './config/index.ts';
