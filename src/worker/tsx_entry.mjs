// Development only: when jobvisor runs from its TypeScript sources, worker
// threads load the worker through tsx. The compiled package uses entry.js.
import { register } from 'tsx/esm/api';

register();
const worker = await import('./entry.ts');
export default worker.default;
