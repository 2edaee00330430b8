/**
 * The package's root folder (package.json, migrations/, config/, bench/):
 * src/.. in a checkout, dist/.. in an installed package.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const PACKAGE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
