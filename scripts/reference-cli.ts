/**
 * docs/reference/cli.md from the commands' help specs (src/cli/commands.ts):
 * the command table (readmeTable()), then each command's help
 * exactly as `jobvisor help COMMAND` prints it.
 */
import { COMMAND_SPECS } from '../src/cli/commands.ts';
import { commandHelp, readmeTable } from '../src/cli/help.ts';
import { generatedHeader, inline } from './reference-markdown.ts';

export function cliPage(): string {
  const out = [
    generatedHeader('src/cli/commands.ts'),
    '# Command line',
    '',
    'The `jobvisor` command comes with the package (`npx jobvisor …`, `node_modules/.bin/jobvisor`).',
    'Exit status 0 on success, 2 on bad usage or bad input (with a one-line message naming what is',
    'wrong; nothing is written), 1 on other failures. Every command answers `--help`.',
    '',
    '## Commands',
    '',
    inline(readmeTable()),
    '',
  ];
  for (const spec of COMMAND_SPECS) {
    out.push(
      `## jobvisor ${spec.name}`,
      '',
      inline(spec.summary),
      '',
      '```text',
      commandHelp([spec]).trimEnd(),
      '```',
      '',
    );
  }
  return out.join('\n');
}
