// Lint rule jobvisor/layers: which parts of src/ may import which. A part is a
// folder of src/ (queue/admin/ counts as its own part, the operator API above
// the runtime statements), or a file directly in src/. Imports point down the
// floors: cli → run → supervisor → queue → db, with the leaves at the bottom.
// The table is the rule; docs/ARCHITECTURE.md draws the same table, and
// test/packaging/lint_layers.test.ts checks that the two agree.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'src');

/** Modules that import nothing above them (only other leaves). */
export const LEAVES = [
  'builtins',
  'cached',
  'duration',
  'errors',
  'log',
  'log_stream',
  'names',
  'paths',
  'secrets',
  'suggest',
  'version',
  'within',
];

/** Part → the other parts it may import. `*`: any (the package's public entry). */
export const LAYERS = {
  ...Object.fromEntries(LEAVES.map((leaf) => [leaf, LEAVES])),
  config: LEAVES,
  db: LEAVES,
  tracing: LEAVES,
  worker: ['queue', 'db', 'tracing', ...LEAVES],
  queue: ['config', 'db', 'tracing', ...LEAVES],
  'queue/admin': ['queue', 'config', 'db', ...LEAVES],
  tasks: ['worker', 'queue', 'db', ...LEAVES],
  supervisor: ['worker', 'queue', 'config', 'db', 'tracing', ...LEAVES],
  metrics: ['supervisor', 'queue', 'config', 'db', ...LEAVES],
  dashboard: ['queue/admin', 'queue', 'config', 'db', ...LEAVES],
  run: ['supervisor', 'metrics', 'worker', 'config', 'db', 'tracing', ...LEAVES],
  bench: ['supervisor', 'queue', 'config', 'db', ...LEAVES],
  cluster: ['run', 'supervisor', 'metrics', 'queue', 'config', 'db', ...LEAVES],
  cli: ['cluster', 'run', 'bench', 'dashboard', 'supervisor', 'worker', 'queue/admin', 'queue', 'config', 'db', ...LEAVES],
  entry: ['*'],
  index: ['*'],
};

/** The part of src/ that `file` (absolute) belongs to, or undefined outside src/. */
export function partOf(file, srcDir) {
  const rel = path.relative(srcDir, file);
  if (rel.startsWith('..') || path.isAbsolute(rel)) return undefined;
  const segments = rel.split(path.sep);
  if (segments.length === 1) return segments[0].replace(/\.[cm]?[jt]s$/, '');
  if (segments[0] === 'queue' && segments[1] === 'admin' && segments.length > 2) return 'queue/admin';
  return segments[0];
}

export const layers = {
  meta: {
    type: 'problem',
    docs: { description: 'imports between the parts of src/ point down the floors (docs/ARCHITECTURE.md)' },
    messages: {
      wrongWay:
        'src/{{from}} may not import src/{{to}} ({{from}} may import: {{allowed}}): move what both need to a leaf module, or see docs/ARCHITECTURE.md',
      unknownPart:
        'src/{{part}} has no place in the layering table: add it to LAYERS in scripts/eslint-layers.js and to docs/ARCHITECTURE.md',
    },
    schema: [],
  },
  create(context) {
    const file = context.physicalFilename ?? context.filename;
    const from = partOf(file, SRC);
    if (from === undefined) return {};
    const allowed = LAYERS[from];
    function check(node, source) {
      if (!source || source.type !== 'Literal' || typeof source.value !== 'string') return;
      if (!source.value.startsWith('.')) return;
      const to = partOf(path.resolve(path.dirname(file), source.value), SRC);
      if (to === undefined || to === from) return;
      if (allowed === undefined) {
        context.report({ node, messageId: 'unknownPart', data: { part: from } });
        return;
      }
      if (allowed.includes('*') || allowed.includes(to)) return;
      const shown = allowed.filter((p) => !LEAVES.includes(p)).concat('the leaves');
      context.report({ node, messageId: 'wrongWay', data: { from, to, allowed: shown.join(', ') } });
    }
    return {
      ImportDeclaration: (node) => check(node, node.source),
      ExportAllDeclaration: (node) => check(node, node.source),
      ExportNamedDeclaration: (node) => check(node, node.source),
      ImportExpression: (node) => check(node, node.source),
      TSImportType: (node) =>
        check(node, node.argument?.type === 'TSLiteralType' ? node.argument.literal : node.argument),
    };
  },
};

export default { rules: { layers } };
