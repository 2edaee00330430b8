/** Help text and the README's command table, both rendered from COMMAND_SPECS. */
import { COMMAND_SPECS, type CommandSpec } from './commands.ts';

const CONFIG_LINE =
  'configuration: config/default.json, config/demo.json (repository only), config/$NODE_ENV.json, $JOBVISOR_CONFIG, environment';

function synopsis(c: CommandSpec): string {
  return `jobvisor ${c.name}${c.args ? ` ${c.args}` : ''}`;
}

/** `jobvisor --help`: one line per command. */
export function usage(): string {
  const width = Math.max(...COMMAND_SPECS.map((c) => synopsis(c).length)) + 2;
  const lines = COMMAND_SPECS.map((c) => `  ${synopsis(c).padEnd(width)}${c.summary}`);
  return [
    'usage: jobvisor <command> [options]',
    '',
    ...lines,
    '',
    'jobvisor help COMMAND (or COMMAND --help) shows its options, defaults and an example.',
    CONFIG_LINE,
    '',
  ].join('\n');
}

/** `jobvisor help COMMAND`: usage, options with defaults, one example. */
export function commandHelp(specs: CommandSpec[]): string {
  return specs
    .map((c) => {
      const lines = [`usage: ${synopsis(c)}`, '', c.summary, ''];
      if (c.options.length > 0) {
        const width = Math.max(...c.options.map((o) => o.flag.length)) + 2;
        lines.push('options:');
        for (const o of c.options)
          lines.push(`  ${o.flag.padEnd(width)}${o.meaning}${o.default ? ` (default: ${o.default})` : ''}`);
        lines.push('');
      }
      for (const note of c.notes ?? []) lines.push(note);
      lines.push('example:', `  ${c.example}`, '');
      return lines.join('\n');
    })
    .join('\n');
}

/** The README's command table (Markdown), between its markers. */
export function readmeTable(): string {
  const cell = (s: string) => s.replaceAll('|', '\\|');
  const rows = COMMAND_SPECS.map((c) => {
    const options = c.options
      .map((o) => `\`${cell(o.flag)}\`${o.default ? ` (default: ${cell(o.default)})` : ''}`)
      .join(', ');
    return `| \`${cell(synopsis(c))}\` | ${cell(c.summary)} | ${options || '—'} | \`${cell(c.example)}\` |`;
  });
  return ['| command | what it does | options | example |', '|---|---|---|---|', ...rows].join('\n');
}

export const README_MARKERS = {
  start: '<!-- commands: generated from src/cli/commands.ts by `npm run readme`; do not edit -->',
  end: '<!-- /commands -->',
} as const;

/** README text with the table between the markers replaced. */
export function withReadmeTable(readme: string): string {
  const start = readme.indexOf(README_MARKERS.start);
  const end = readme.indexOf(README_MARKERS.end);
  if (start < 0 || end < start) throw new Error('README.md lacks the command table markers');
  return `${readme.slice(0, start + README_MARKERS.start.length)}\n${readmeTable()}\n${readme.slice(end)}`;
}
