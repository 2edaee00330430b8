/**
 * The generated reference pages of the docs site: each page's file and the
 * function that renders it from the code. `npm run docs:reference` writes
 * them; test/packaging/docs_reference.test.ts renders them again and fails when a
 * committed page differs.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { apiPage } from './reference-api.ts';
import { cliPage } from './reference-cli.ts';
import { configurationPage } from './reference-config.ts';
import { eventsPage } from './reference-events.ts';
import { metricsPage } from './reference-metrics.ts';
import { ROOT } from './ts-program.ts';

export interface ReferencePage {
  /** Relative to the repository. */
  file: string;
  render(): string | Promise<string>;
}

export const REFERENCE_PAGES: ReferencePage[] = [
  { file: 'docs/reference/api.md', render: apiPage },
  { file: 'docs/reference/cli.md', render: cliPage },
  { file: 'docs/reference/configuration.md', render: configurationPage },
  { file: 'docs/reference/events.md', render: eventsPage },
  { file: 'docs/reference/metrics.md', render: metricsPage },
];

/** The committed text of a page ('' when it is missing). */
export function committed(page: ReferencePage): string {
  try {
    return readFileSync(path.join(ROOT, page.file), 'utf8');
  } catch {
    return '';
  }
}
