/**
 * The layering of src/ is checked, not only written down:
 * - `npm run lint` runs jobvisor/layers (scripts/eslint-layers.js) on src/, and
 *   the rule reports an import that runs up the floors, passes one that runs
 *   down, and asks for a table row for a folder it does not know;
 * - today's src/ passes it;
 * - docs/ARCHITECTURE.md draws the same table the rule enforces;
 * - there is no circle of files importing each other in src/.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import ts from 'typescript';
import tseslint from 'typescript-eslint';
import layersPlugin, { LAYERS, LEAVES } from '../../scripts/eslint-layers.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SRC = path.join(root, 'src');

/** ESLint with only the layering rule: parsing without type information keeps it fast. */
function layersOnly(): ESLint {
  return new ESLint({
    cwd: root,
    overrideConfigFile: true,
    overrideConfig: [
      {
        files: ['**/*.ts'],
        languageOptions: { parser: tseslint.parser },
        plugins: { jobvisor: layersPlugin },
        rules: { 'jobvisor/layers': 'error' },
      },
    ],
  });
}

async function layerMessages(code: string, file: string): Promise<string[]> {
  const [result] = await layersOnly().lintText(code, { filePath: path.join(root, file) });
  assert.ok(result);
  assert.deepEqual(
    result.messages.filter((m) => m.ruleId !== 'jobvisor/layers'),
    [],
    'the code parses',
  );
  return result.messages.map((m) => m.message);
}

describe('layering lint rule', () => {
  it('is switched on for src/ by the config npm run lint uses', async () => {
    const eslint = new ESLint({ cwd: root });
    const config = (await eslint.calculateConfigForFile(path.join(SRC, 'worker/loader.ts'))) as {
      rules?: Record<string, unknown>;
    };
    assert.deepEqual(config.rules?.['jobvisor/layers'], [2]);
  });

  it('reports an import up the floors and names what the part may import', async () => {
    const messages = await layerMessages(
      `import { listJobs } from '../queue/admin/list.ts';\nexport const list = listJobs;\n`,
      'src/worker/task_options.ts',
    );
    assert.equal(messages.length, 1, messages.join('\n'));
    assert.match(
      messages[0] ?? '',
      /src\/worker may not import src\/queue\/admin \(worker may import: queue, db, tracing, the leaves\)/,
    );
  });

  it('reports worker or tasks importing the supervisor, runtime code importing the operator API, a leaf importing config', async () => {
    const cases: Array<[file: string, code: string, to: string]> = [
      ['src/worker/loader.ts', `import type { SupervisorEvents } from '../supervisor/events.ts';`, 'supervisor'],
      ['src/tasks/welcome_email.ts', `export { Supervisor } from '../supervisor/supervisor.ts';`, 'supervisor'],
      [
        'src/supervisor/leases/presence.ts',
        `import { listSupervisors } from '../../queue/admin/supervisors.ts';`,
        'queue/admin',
      ],
      ['src/queue/claim.ts', `export * from './admin/index.ts';`, 'queue/admin'],
      ['src/db/migrate.ts', `const c = await import('../config/index.ts');`, 'config'],
      ['src/version.ts', `import { loadConfig } from './config/index.ts';`, 'config'],
      ['src/config/validate.ts', `import type { Store } from '../queue/sql.ts';`, 'queue'],
    ];
    for (const [file, code, to] of cases) {
      const messages = await layerMessages(`${code}\nexport {};\n`, file);
      assert.equal(messages.length, 1, `${file}: ${messages.join('\n')}`);
      assert.ok(messages[0]?.includes(`may not import src/${to} `), `${file}: ${messages[0]}`);
    }
  });

  it('passes imports down the floors, within a part, and from the public entry', async () => {
    const cases: Array<[file: string, code: string]> = [
      ['src/supervisor/leases/presence.ts', `import { beatSupervisor } from '../../queue/presence.ts';`],
      ['src/queue/admin/list.ts', `import { planned } from '../sql.ts';`],
      ['src/queue/claim.ts', `import { planned } from './sql.ts';\nimport { NAME } from '../names.ts';`],
      ['src/worker/task_options.ts', `import { checkQueue } from '../names.ts';`],
      ['src/cli/start.ts', `import { runSupervisor } from '../run/runner.ts';`],
      ['src/index.ts', `export { Supervisor } from './supervisor/supervisor.ts';`],
      ['src/metrics/observe.ts', `import type { SupervisorEvents } from '../supervisor/events.ts';`],
      ['src/log.ts', `import { LogStream } from './log_stream.ts';\nimport pino from 'pino';`],
    ];
    for (const [file, code] of cases) assert.deepEqual(await layerMessages(`${code}\nexport {};\n`, file), [], file);
  });

  it('asks for a table row for a part it does not know', async () => {
    const messages = await layerMessages(
      `import { migrate } from '../db/migrate.ts';\nexport {};\n`,
      'src/newpart/x.ts',
    );
    assert.equal(messages.length, 1);
    assert.match(messages[0] ?? '', /src\/newpart has no place in the layering table/);
  });

  it('finds no wrong-way import in src/ as it stands', async () => {
    const results = await layersOnly().lintFiles(['src/**/*.ts']);
    assert.ok(results.length > 100, `${results.length} files linted`);
    const found = results.flatMap((r) =>
      r.messages.map((m) => `${path.relative(root, r.filePath)}:${m.line} ${m.message}`),
    );
    assert.deepEqual(found, []);
  });

  it('every part of src/ has a row', () => {
    const parts = readdirSync(SRC, { withFileTypes: true }).map((e) =>
      e.isDirectory() ? e.name : e.name.replace(/\.ts$/, ''),
    );
    assert.deepEqual(
      parts.filter((p) => LAYERS[p] === undefined),
      [],
    );
  });

  it('docs/ARCHITECTURE.md draws the table the rule enforces', () => {
    const doc = readFileSync(path.join(root, 'docs/ARCHITECTURE.md'), 'utf8');
    const section = doc.slice(doc.indexOf('<!-- layers -->'), doc.indexOf('<!-- /layers -->'));
    assert.ok(section.length > 20, 'the table sits between <!-- layers --> and <!-- /layers -->');
    const drawn: Record<string, string[]> = {};
    for (const line of section.split('\n')) {
      const cells = line.split('|').map((c) => c.trim());
      if (cells.length < 4 || !cells[1]?.startsWith('`')) continue;
      const names = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? '');
      const mayImport = names(cells[2] ?? '').concat(/\bleaves\b/.test(cells[2] ?? '') ? LEAVES : []);
      for (const part of names(cells[1])) drawn[part] = mayImport.sort();
    }
    const enforced = Object.fromEntries(Object.entries(LAYERS).map(([part, to]) => [part, [...to].sort()]));
    assert.deepEqual(drawn, enforced);
  });
});

/** Each file of src/ → the files of src/ it imports (static, re-exported, dynamic, type-only). */
function importGraph(): Map<string, string[]> {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (p.endsWith('.ts')) files.push(p);
    }
  };
  walk(SRC);
  const known = new Set(files);
  return new Map(
    files.map((file) => [
      path.relative(SRC, file),
      ts
        .preProcessFile(readFileSync(file, 'utf8'), true, true)
        .importedFiles.map((i) => path.resolve(path.dirname(file), i.fileName))
        .filter((target) => known.has(target))
        .map((target) => path.relative(SRC, target)),
    ]),
  );
}

/** The circles of `graph` (strongly connected parts of two or more files, or a file importing itself), each sorted. */
function circles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v) ?? 0);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0));
    }
    if (low.get(v) !== index.get(v)) return;
    const part: string[] = [];
    let w: string | undefined;
    do {
      w = stack.pop();
      if (w === undefined) break;
      onStack.delete(w);
      part.push(w);
    } while (w !== v);
    if (part.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(part.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found.sort((a, b) => (a[0] ?? '').localeCompare(b[0] ?? ''));
}

/**
 * Circles that another change removes (issue 25's completer work untangles
 * outcome ⇄ sink). Listed so this check guards every other file today; the
 * test fails once a listed circle is gone, so the entry is deleted with it.
 */
describe('import circles', () => {
  it('finds a circle of any length, and none in a chain', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts', 'd.ts']],
      ['d.ts', []],
      ['e.ts', ['e.ts']],
    ]);
    assert.deepEqual(circles(graph), [['a.ts', 'b.ts', 'c.ts'], ['e.ts']]);
    assert.deepEqual(
      circles(
        new Map([
          ['a.ts', ['b.ts', 'c.ts']],
          ['b.ts', ['c.ts']],
          ['c.ts', []],
        ]),
      ),
      [],
    );
  });

  it('src/ has no circle of files importing each other', () => {
    const graph = importGraph();
    assert.ok(graph.size > 100 && (graph.get('supervisor/supervisor.ts')?.length ?? 0) > 5, 'the graph was read');
    assert.deepEqual(circles(graph), []);
  });
});
