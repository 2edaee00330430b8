/** The package version, for logs, metrics and `--version`. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PACKAGE_ROOT } from './paths.ts';

export const VERSION: string = (
  JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }
).version;
