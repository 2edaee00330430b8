/**
 * docs/reference/configuration.md from the convict schema (src/config/schema.ts
 * and its sections): every key with its environment variable, default,
 * accepted values and doc. The accepted values are the schema's own checks
 * speaking: each format is given a few wrong values and its messages are kept,
 * so the page says what start-up would say. A default computed at start-up
 * (`availableParallelism()`) is shown as its expression, read from the source,
 * so the page is the same on every machine.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import convict from 'convict';
import ts from 'typescript';
import { QUEUE_DEFAULTS, schema } from '../src/config/schema.ts';
import { generatedHeader, table } from './reference-markdown.ts';
import { interfaceIn, membersOf, programOf, ROOT } from './ts-program.ts';

interface Leaf {
  doc: string;
  format: unknown;
  default: unknown;
  env?: string;
  sensitive?: boolean;
  duration?: boolean;
}

const SCHEMA_FILES = ['src/config/schema.ts', 'src/config/cluster.ts', 'src/config/dashboard.ts'];

export function configurationPage(): string {
  const computed = computedDefaults();
  const sections = new Map<string, string[][]>();
  for (const [key, leaf] of leaves(schema)) {
    const section = key.split('.')[0] as string;
    const rows = sections.get(section) ?? [];
    const fallback = computed.get(key);
    rows.push([
      `\`${key}\``,
      leaf.env ? `\`${leaf.env}\`` : '—',
      fallback ? `\`${fallback}\` (computed at start)` : `\`${JSON.stringify(leaf.default)}\``,
      accepted(leaf),
      leaf.doc + (leaf.sensitive ? ' Secret: never logged.' : ''),
    ]);
    sections.set(section, rows);
  }
  const out = [
    generatedHeader('src/config/schema.ts'),
    '# Configuration',
    '',
    'Every key of the configuration, as the schema defines it. Layers, later wins: the schema defaults',
    'below, `config/default.json`, `config/$NODE_ENV.json`, the file named by `JOBVISOR_CONFIG` (else',
    "the app's `jobvisor.config.json` or `config/jobvisor.json`), then the environment variables.",
    '`run()` takes the same sections as options and reads neither files nor the environment.',
    'Durations are written `"30s"`, `"5m"` or as milliseconds. An unknown or mistyped key stops',
    'start-up with a message that names it.',
    '',
  ];
  for (const [section, rows] of sections) {
    out.push(`## ${section}`, '', table(['key', 'environment', 'default', 'accepted', 'meaning'], rows), '');
    if (section === 'queues') out.push(...queueKeys());
  }
  return out.join('\n');
}

/** The keys of one queue (`queues.<name>.…`), from the QueueSettings interface and QUEUE_DEFAULTS. */
function queueKeys(): string[] {
  const program = programOf(['src/config/sections.ts']);
  const checker = program.getTypeChecker();
  const defaults: Record<string, unknown> = QUEUE_DEFAULTS;
  const rows = [
    ...membersOf(interfaceIn(program, 'src/config/sections.ts', 'QueueSettings'), checker),
    ...membersOf(interfaceIn(program, 'src/config/sections.ts', 'RateLimit'), checker).map((m) => ({
      ...m,
      name: `rateLimit.${m.name === 'periodMs' ? 'period' : m.name}`,
    })),
  ].map((m) => [
    `\`queues.<name>.${m.name}\``,
    m.name in defaults ? `\`${JSON.stringify(defaults[m.name])}\`` : '—',
    m.doc,
  ]);
  return [
    'Each queue is an object of these keys (durations as text, as everywhere):',
    '',
    table(['key', 'default', 'meaning'], rows),
    '',
  ];
}

function* leaves(node: unknown, at: string[] = []): Generator<[string, Leaf]> {
  if (isLeaf(node)) {
    yield [at.join('.'), node];
    return;
  }
  for (const [k, v] of Object.entries(node as Record<string, unknown>)) yield* leaves(v, [...at, k]);
}

function isLeaf(node: unknown): node is Leaf {
  return typeof node === 'object' && node !== null && 'doc' in node && 'default' in node;
}

const TYPES = new Map<unknown, string>([
  [String, 'text'],
  [Number, 'a number'],
  [Boolean, 'true or false'],
  [Array, 'a list (comma-separated in the environment)'],
  [Object, 'an object'],
]);

/** What the key's check accepts, in the words of its own error messages. */
function accepted(leaf: Leaf): string {
  const known = TYPES.get(leaf.format);
  if (known) return known;
  if (leaf.format === 'port') return 'a port, 0 to 65535';
  if (Array.isArray(leaf.format)) return `one of ${leaf.format.map((v) => `\`${String(v)}\``).join(', ')}`;
  const said = new Set<string>();
  for (const probe of [true, 'not valid', 0, {}]) {
    const message = refusal(leaf, probe);
    // parseDuration's own message repeats what the format's says.
    if (message && !message.includes('is not a duration')) said.add(message);
  }
  if (said.size === 0)
    throw new Error(`configuration: no probe is refused by the format of ${JSON.stringify(leaf.doc)}`);
  return [...said].join('; ');
}

/** The message the key's format gives for `probe`, cleaned of the key and the value; null when it is accepted. */
function refusal(leaf: Leaf, probe: unknown): string | null {
  try {
    if (typeof leaf.format === 'function') (leaf.format as (v: unknown) => void)(probe);
    else {
      const one = convict({ x: { format: leaf.format, default: leaf.default } });
      one.load({ x: probe });
      one.validate();
    }
    return null;
  } catch (err) {
    return (err as Error).message
      .replace(/^x: /, '')
      .replace(/(, got |: value was ).*$/s, '')
      .replace(/^must be /, '');
  }
}

/** Keys whose default is computed by a call in the schema's source, with the call's text. */
function computedDefaults(): Map<string, string> {
  const objects = new Map<string, ts.ObjectLiteralExpression>();
  for (const file of SCHEMA_FILES) {
    const source = ts.createSourceFile(file, readFileSync(path.join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest, true);
    for (const statement of source.statements) {
      if (!ts.isVariableStatement(statement)) continue;
      for (const d of statement.declarationList.declarations)
        if (ts.isIdentifier(d.name) && d.initializer && ts.isObjectLiteralExpression(d.initializer))
          objects.set(d.name.text, d.initializer);
    }
  }
  const found = new Map<string, string>();
  const walk = (object: ts.ObjectLiteralExpression, at: string[]): void => {
    for (const p of object.properties) {
      if (!ts.isPropertyAssignment(p) || !(ts.isIdentifier(p.name) || ts.isStringLiteral(p.name))) continue;
      let value: ts.Expression = p.initializer;
      while (ts.isAsExpression(value) || ts.isSatisfiesExpression(value) || ts.isParenthesizedExpression(value))
        value = value.expression;
      if (p.name.text === 'default' && ts.isCallExpression(value))
        found.set(at.join('.'), value.getText(object.getSourceFile()));
      else if (ts.isObjectLiteralExpression(value)) walk(value, [...at, p.name.text]);
      else if (ts.isIdentifier(value) && objects.has(value.text))
        walk(objects.get(value.text) as ts.ObjectLiteralExpression, [...at, p.name.text]);
    }
  };
  const root = objects.get('schema');
  if (!root) throw new Error('src/config/schema.ts: no `schema` object');
  walk(root, []);
  return found;
}
