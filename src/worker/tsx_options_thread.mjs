// Development only: the options thread (options_thread.ts) through tsx, as
// tsx_entry.mjs does for entry.ts. The compiled package uses options_thread.js.
import { register } from 'tsx/esm/api';

register();
await import('./options_thread.ts');
