// `npm pack` / `npm publish` (prepack): dist/ is rebuilt from nothing, so a file
// whose source was deleted or renamed never ships.
import { rmSync } from 'node:fs';

rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true });
