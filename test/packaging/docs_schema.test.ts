/**
 * docs/reference/schema.md cannot drift from the migrations: its tables and
 * their columns (name and type, in order) are those of a migrated database,
 * and its job statuses are the values the status CHECK of jobvisor.jobs
 * admits and the API's JOB_STATUSES. A table, column or status added by a
 * migration without a line on the page fails here, naming it.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { JOB_STATUSES } from '../../src/index.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

const PAGE = new URL('../../docs/reference/schema.md', import.meta.url);

/** `## \`jobvisor.jobs\`` sections → their `| \`column\` | \`type\` | … |` rows, in order. */
function documentedTables(text: string): Map<string, string[]> {
  const tables = new Map<string, string[]>();
  let current: string[] | null = null;
  for (const line of text.split('\n')) {
    const heading = /^## `jobvisor\.([a-z_]+)`/.exec(line);
    if (heading) {
      current = [];
      tables.set(heading[1] as string, current);
      continue;
    }
    if (line.startsWith('## ')) current = null;
    const row = /^\| `([a-z_]+)` \| `([^`]+)` \|/.exec(line);
    if (row && current) current.push(`${row[1]} ${row[2]}`);
  }
  return tables;
}

/** The rows of the "Job statuses" section's table: its first column. */
function documentedStatuses(text: string): string[] {
  const start = text.indexOf('\n## Job statuses');
  assert.ok(start >= 0, 'schema.md has a "Job statuses" section');
  const end = text.indexOf('\n## ', start + 1);
  const section = text.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1] as string);
}

describe('docs/reference/schema.md against a migrated database', () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase('docs_schema');
  });
  after(() => db.drop());

  it('lists every table of the schema with its columns and types, in order, and nothing else', async () => {
    const { rows } = await db.pool.query<{ table: string; column: string; type: string }>(`
      SELECT c.relname AS table, a.attname AS column, format_type(a.atttypid, a.atttypmod) AS type
        FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace
        JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
       WHERE n.nspname = 'jobvisor' AND c.relkind IN ('r', 'p')
       ORDER BY c.relname, a.attnum`);
    const actual = new Map<string, string[]>();
    for (const r of rows) {
      const columns = actual.get(r.table) ?? [];
      columns.push(`${r.column} ${r.type}`);
      actual.set(r.table, columns);
    }
    assert.ok(actual.has('jobs') && actual.size >= 8, `tables read: ${[...actual.keys()].join(', ')}`);
    const documented = documentedTables(readFileSync(PAGE, 'utf8'));
    assert.deepEqual(
      [...documented.keys()].sort(),
      [...actual.keys()].sort(),
      'the tables of schema.md (## `jobvisor.NAME`) are the tables of the migrated schema',
    );
    for (const [table, columns] of actual)
      assert.deepEqual(
        documented.get(table),
        columns,
        `jobvisor.${table}: schema.md's rows (| \`column\` | \`type\` | meaning |) are its columns, in order`,
      );
  });

  it('lists exactly the statuses the status CHECK of jobvisor.jobs admits, which are the API’s', async () => {
    const { rows } = await db.pool.query<{ def: string }>(`
      SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint
       WHERE conrelid = 'jobvisor.jobs'::regclass AND contype = 'c' AND pg_get_constraintdef(oid) LIKE '%status%'`);
    const check = rows.find((r) => /status\b.*ANY|status = /.test(r.def) && r.def.includes("'pending'"));
    assert.ok(check, `a status CHECK on jobvisor.jobs: ${rows.map((r) => r.def).join('; ')}`);
    const admitted = [...check.def.matchAll(/'([a-z_]+)'::text/g)].map((m) => m[1] as string);
    const documented = documentedStatuses(readFileSync(PAGE, 'utf8'));
    assert.deepEqual([...documented].sort(), [...admitted].sort(), "schema.md's statuses are the CHECK's");
    assert.deepEqual([...documented].sort(), [...JOB_STATUSES].sort(), "schema.md's statuses are JOB_STATUSES");
  });
});
