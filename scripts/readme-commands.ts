/**
 * `npm run readme`: rewrites the README's command table from
 * src/cli/commands.ts. test/unit/cli_help.test.ts fails while the README is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { withReadmeTable } from '../src/cli/help.ts';

const file = fileURLToPath(new URL('../README.md', import.meta.url));
const before = readFileSync(file, 'utf8');
const after = withReadmeTable(before);
if (after !== before) writeFileSync(file, after);
process.stdout.write(after === before ? 'README.md is up to date\n' : 'README.md: command table rewritten\n');
