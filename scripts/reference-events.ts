/**
 * docs/reference/events.md from the typed event map (src/supervisor/events.ts),
 * read with the TypeScript compiler: each event of `Events` with its doc
 * comment and payload, then every named type a payload uses, with its fields.
 */
import ts from 'typescript';
import { generatedHeader, inline, table } from './reference-markdown.ts';
import { docOf, interfaceIn, membersOf, programOf, type Member } from './ts-program.ts';

const FILE = 'src/supervisor/events.ts';

export function eventsPage(): string {
  const program = programOf([FILE]);
  const checker = program.getTypeChecker();
  const events = interfaceIn(program, FILE, 'Events');
  const named = new Map<string, ts.InterfaceDeclaration | ts.TypeAliasDeclaration>();
  const collect = (node: ts.Node): void => {
    if (ts.isTypeReferenceNode(node)) {
      const symbol = checker.getSymbolAtLocation(node.typeName);
      const target = symbol && symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      const declaration = target?.declarations?.[0];
      const name = node.typeName.getText();
      if (
        declaration &&
        !named.has(name) &&
        !declaration.getSourceFile().isDeclarationFile &&
        (ts.isInterfaceDeclaration(declaration) || ts.isTypeAliasDeclaration(declaration))
      ) {
        named.set(name, declaration);
        ts.forEachChild(declaration, collect);
      }
    }
    ts.forEachChild(node, collect);
  };
  const out = [
    generatedHeader(FILE),
    '# Events',
    '',
    "A supervisor's typed event map: `runner.events` (from `run()`) emits these, and the",
    "supervisor's metrics and logs are fed from the same events. Listeners observe: no behaviour",
    'depends on them, and a listener that throws is reported, never thrown into the supervisor.',
    'Per-job events carry arrays, so a batch of a thousand completions is one emit.',
    '',
    '```ts',
    "import { run } from 'jobvisor';",
    '',
    'const runner = await run({ connectionString: process.env.DATABASE_URL, tasks: {} });',
    "runner.events.on('job:dead', ({ jobs, errors }) => console.error(jobs.map((j) => j.id), errors));",
    '```',
    '',
  ];
  for (const m of events.members) {
    if (!ts.isPropertySignature(m) || !m.type) continue;
    const name = m.name.getText().replace(/^'(.*)'$/, '$1');
    const symbol = checker.getSymbolAtLocation(m.name);
    out.push(`## \`${name}\``, '');
    const doc = symbol ? docOf(symbol, checker) : '';
    if (doc) out.push(inline(doc), '');
    const payload = ts.isTupleTypeNode(m.type) ? m.type.elements[0] : m.type;
    if (payload && ts.isTypeLiteralNode(payload)) out.push(fields(membersOf(payload, checker)), '');
    else if (payload) out.push(`Payload: \`${payload.getText()}\` (below).`, '');
    if (payload) collect(payload);
  }
  out.push('## Payload types', '');
  for (const [name, declaration] of named) {
    out.push(`### \`${name}\``, '');
    const symbol = checker.getSymbolAtLocation(declaration.name);
    const doc = symbol ? docOf(symbol, checker) : '';
    if (doc) out.push(inline(doc), '');
    if (ts.isInterfaceDeclaration(declaration)) {
      const heritage = declaration.heritageClauses?.map((h) => h.getText()).join(' ');
      if (heritage) out.push(`\`${heritage}\`: its fields too.`, '');
      out.push(fields(membersOf(declaration, checker)), '');
    } else if (ts.isTypeLiteralNode(declaration.type)) {
      out.push(fields(membersOf(declaration.type, checker)), '');
    } else out.push(`\`${declaration.type.getText().replace(/\s+/g, ' ')}\``, '');
  }
  return out.join('\n');
}

function fields(members: Member[]): string {
  return table(
    ['field', 'type', 'meaning'],
    members.map((f) => [`\`${f.name}${f.optional ? '?' : ''}\``, `\`${f.type}\``, f.doc]),
  );
}
