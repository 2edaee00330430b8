// jobvisor's own image runs the built-in tasks (thumbnail needs sharp,
// daily_report pdfkit) and exports traces (the OpenTelemetry SDK). For the
// package these are optional peer dependencies, kept in devDependencies so the
// checkout has them; here, in the image's deps stage, every optional peer is
// moved to dependencies, so `npm ci --omit=dev` installs it at the version the
// lockfile holds. (Leaving it in devDependencies as well would not do: npm
// keeps the lockfile's "dev" marks unless the root's dependency lists change.)
import { readFileSync, writeFileSync } from 'node:fs';

const file = process.argv[2] ?? 'package.json';
const pkg = JSON.parse(readFileSync(file, 'utf8'));
for (const name of Object.keys(pkg.peerDependencies ?? {})) {
  const range = pkg.devDependencies?.[name];
  if (!range) throw new Error(`${name} is a peer dependency but not a devDependency: the lockfile has no version of it`);
  pkg.dependencies[name] = range;
  delete pkg.devDependencies[name];
}
writeFileSync(file, `${JSON.stringify(pkg, null, 2)}\n`);
