/** Help text and the reference's command table, both rendered from COMMAND_SPECS. */
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

/** The command table (Markdown) of the command-line reference, docs/reference/cli.md. */
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
