#!/usr/bin/env node
// The jobvisor command. In a checkout with dev dependencies it runs the
// TypeScript sources through tsx; an installed or built package runs dist/.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const source = `${root}src/cli/bin.ts`;
const compiled = `${root}dist/cli/bin.js`;

async function tsxAvailable() {
  try {
    const { register } = await import('tsx/esm/api');
    register();
    return true;
  } catch {
    return false;
  }
}

if (existsSync(source) && (await tsxAvailable())) {
  await import(source);
} else if (existsSync(compiled)) {
  await import(compiled);
} else {
  process.stderr.write('jobvisor: neither dist/ (npm run build) nor the TypeScript sources with tsx are present\n');
  process.exit(1);
}
