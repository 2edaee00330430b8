// After `tsc` (npm run build): a CommonJS copy of the declarations, dist/**/*.d.cts.
//
// The package is one ES module build; CommonJS apps load that same build with
// require() (Node >= 20.19 / 22.12), so there is one module instance and no
// second copy of its state. TypeScript, though, reads a `.d.ts` of a
// "type": "module" package as an ES module, and a CommonJS file of an app
// compiled under `module` node16 may not require it (TS1479). The `require`
// condition of package.json `exports` (and `types`, for `moduleResolution`
// node10) therefore points at these copies, which TypeScript reads as
// CommonJS: relative imports name `.cjs` siblings (whose declarations are
// these `.d.cts` files), and a default import of a package (`import pg from
// 'pg'`) becomes a namespace import, which needs no `esModuleInterop` in the app.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const dist = fileURLToPath(new URL('../dist', import.meta.url));

/** Every file under `dir`. */
function walk(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? walk(path.join(dir, entry.name)) : [path.join(dir, entry.name)],
  );
}

/** The CommonJS reading of one ES module declaration file. */
function toCommonJs(text) {
  return text
    .replace(/((?:\bfrom|\bimport\()\s*)(['"])(\.{1,2}\/[^'"]*?)\.(?:js|ts)\2/g, '$1$2$3.cjs$2')
    .replace(
      /^import (?:type )?([A-Za-z_$][\w$]*) from (['"])([^.'"][^'"]*)\2;$/gm,
      'import type * as $1 from $2$3$2;',
    );
}

let count = 0;
for (const file of walk(dist).filter((f) => f.endsWith('.d.ts'))) {
  writeFileSync(file.replace(/\.d\.ts$/, '.d.cts'), toCommonJs(readFileSync(file, 'utf8')));
  count++;
}
if (count === 0) throw new Error(`no declarations in ${dist}: run tsc first`);
