// Development only: the traced worker entry (traced-entry.ts) through tsx, as
// tsx-entry.mjs does for entry.ts. The compiled package uses traced-entry.js.
import { register } from 'tsx/esm/api';

register();
const worker = await import('./traced-entry.ts');
export default worker.default;
