/**
 * docs/operations/postgresql.md says, for every migration, which lock it takes
 * on jobvisor.jobs and for how long (the table under "What a migration locks").
 * A migration added to migrations/ without its row there fails here, naming it;
 * so does a row naming a migration that does not exist.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';

const PAGE = new URL('../../docs/operations/postgresql.md', import.meta.url);
const MIGRATIONS = new URL('../../migrations/', import.meta.url);

/** The migrations named in the first column of the table headed `| migration | lock on …`. */
function documentedMigrations(text: string): string[] {
  const lines = text.split('\n');
  const start = lines.findIndex((line) => line.startsWith('| migration | lock on `jobvisor.jobs`'));
  assert.ok(start >= 0, 'postgresql.md has the table of migration locks');
  const names: string[] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    const first = line.split('|')[1] ?? '';
    names.push(...[...first.matchAll(/`(\d{3}_[a-z0-9_]+)`/g)].map((m) => m[1] as string));
  }
  return names;
}

test('every migration has its row in the table of migration locks, and every row a migration', () => {
  const migrations = readdirSync(MIGRATIONS)
    .filter((f) => /^\d{3}_.*\.sql$/.test(f))
    .map((f) => f.replace(/\.sql$/, ''))
    .sort();
  assert.ok(migrations.length > 20, `read the migrations: ${migrations.join(' ')}`);
  const documented = documentedMigrations(readFileSync(PAGE, 'utf8'));
  assert.deepEqual(
    migrations.filter((m) => !documented.includes(m)),
    [],
    'migrations without a row in docs/operations/postgresql.md (say which lock each takes on jobvisor.jobs, and for how long)',
  );
  assert.deepEqual(
    documented.filter((m) => !migrations.includes(m)),
    [],
    'rows of docs/operations/postgresql.md naming no migration',
  );
  assert.equal(new Set(documented).size, documented.length, `a migration in two rows: ${documented.join(' ')}`);
});
