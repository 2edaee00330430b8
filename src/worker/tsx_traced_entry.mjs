// Development only: the traced worker entry (traced_entry.ts) through tsx, as
// tsx_entry.mjs does for entry.ts. The compiled package uses traced_entry.js.
import { register } from 'tsx/esm/api';

register();
const worker = await import('./traced_entry.ts');
export default worker.default;
