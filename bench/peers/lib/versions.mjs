// Versions of the installed peer packages, read from their package.json files in
// bench/peers/node_modules (some packages do not export ./package.json).
import { readFileSync } from 'node:fs';

const modules = new URL('../node_modules/', import.meta.url);

export function packageVersions(names) {
  const out = {};
  for (const name of names) {
    const file = new URL(`${name}/package.json`, modules);
    out[name] = JSON.parse(readFileSync(file, 'utf8')).version;
  }
  out.node = process.version;
  return out;
}
