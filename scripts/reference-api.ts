/**
 * docs/reference/api.md: TypeDoc (with typedoc-plugin-markdown) over
 * src/index.ts, as one page. Source links are off, so the page changes only
 * when an export, its type or its doc comment does.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Application, LogLevel } from 'typedoc';
import { generatedHeader } from './reference-markdown.ts';
import { ROOT } from './ts-program.ts';

export async function apiPage(): Promise<string> {
  const out = mkdtempSync(path.join(tmpdir(), 'jobvisor-typedoc-'));
  try {
    const app = await Application.bootstrapWithPlugins({
      entryPoints: [path.join(ROOT, 'src/index.ts')],
      tsconfig: path.join(ROOT, 'tsconfig.json'),
      plugin: ['typedoc-plugin-markdown'],
      out,
      readme: 'none',
      disableSources: true,
      disableGit: true,
      excludePrivate: true,
      excludeExternals: true,
      excludeInternal: true,
      hideGenerator: true,
      logLevel: LogLevel.Error,
      // typedoc-plugin-markdown's options
      outputFileStrategy: 'modules',
      entryFileName: 'index',
      hidePageHeader: true,
      hideBreadcrumbs: true,
      useCodeBlocks: true,
      // Its own anchors on headings, so its links never depend on how VitePress slugs a heading.
      useHTMLAnchors: true,
      parametersFormat: 'table',
      interfacePropertiesFormat: 'table',
      sanitizeComments: true,
    } as Parameters<typeof Application.bootstrapWithPlugins>[0]);
    const project = await app.convert();
    if (!project) throw new Error('TypeDoc could not convert src/index.ts');
    await app.generateOutputs(project);
    const page = readFileSync(path.join(out, 'index.md'), 'utf8');
    return `${generatedHeader('src/index.ts (TypeDoc)')}\n${page.replace(/^# .*\n/, '# API\n')}`;
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}
