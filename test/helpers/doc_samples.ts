/**
 * The code samples of the docs site's Markdown pages (docs/**\/*.md), as the
 * sample tests read them:
 *
 * - A fence's info string is its language, then optionally `[file name]`
 *   (VitePress shows it as the block's title): ```` ```ts [tasks/send_welcome.ts] ````.
 *   The samples of one page are written out as files of one folder, titled
 *   ones under their title, so one sample may import another.
 * - A shell fence preceded by `<!-- runnable -->` is run by
 *   test/packaging/docs_samples.test.ts, in page order, in that folder. Attributes:
 *   `expect="text"` (its output must hold the text) and
 *   `background until="text"` (started, left running until its output holds the
 *   text, stopped with SIGTERM at the end, which must exit 0).
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const DOCS = path.join(ROOT, 'docs');

export interface Sample {
  /** Page, relative to docs/. */
  page: string;
  /** 1-based line of the fence's first code line in the page. */
  line: number;
  lang: string;
  /** The `[title]`, used as its file name; null when untitled. */
  title: string | null;
  code: string;
  /** Attributes of a `<!-- runnable … -->` comment before the fence; null when not runnable. */
  runnable: Record<string, string> | null;
}

/** Every Markdown page of docs/ (relative paths), without VitePress's own folder. */
export function docPages(): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(path.join(DOCS, dir), { withFileTypes: true })) {
      const rel = path.posix.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!entry.name.startsWith('.')) walk(rel);
      } else if (entry.name.endsWith('.md')) out.push(rel);
    }
  };
  walk('');
  return out.sort();
}

const FENCE = /^(\s*)(`{3,}|~{3,})\s*([^\s`[{]*)\s*(?:\[([^\]]+)\])?.*$/;
const RUNNABLE = /^<!--\s*runnable\b(.*?)-->\s*$/;

/** The fenced code blocks of one page, in order. */
export function samplesOf(page: string, text = readFileSync(path.join(DOCS, page), 'utf8')): Sample[] {
  const lines = text.split('\n');
  const samples: Sample[] = [];
  let lastText = '';
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i] as string);
    if (!open) {
      if ((lines[i] as string).trim() !== '') lastText = (lines[i] as string).trim();
      continue;
    }
    const [, indent = '', fence = '', lang = '', title] = open;
    const start = i + 1;
    let end = start;
    while (end < lines.length && !(lines[end] as string).trimStart().startsWith(fence)) end++;
    const marker = RUNNABLE.exec(lastText);
    samples.push({
      page,
      line: start + 1,
      lang: lang.toLowerCase(),
      title: title?.trim() ?? null,
      code: lines
        .slice(start, end)
        .map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l))
        .join('\n'),
      runnable: marker ? attributes(marker[1] ?? '') : null,
    });
    i = end;
    lastText = '';
  }
  return samples;
}

/** `background until="x" expect="y"` → { background: '', until: 'x', expect: 'y' }. */
function attributes(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of text.matchAll(/([a-z-]+)(?:="([^"]*)")?/g)) out[m[1] as string] = m[2] ?? '';
  return out;
}

export const TYPESCRIPT = new Set(['ts', 'typescript', 'mts', 'cts']);

/**
 * Writes a page's TypeScript samples into `dir` (titled ones under their title,
 * others as sample-<line>.ts), with a package.json of an ES module app.
 * Returns each file's path and the sample it came from.
 */
export function writeSamples(samples: Sample[], dir: string): Map<string, Sample> {
  const files = new Map<string, Sample>();
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'package.json'), '{ "type": "module", "private": true }\n');
  for (const s of samples) {
    if (!TYPESCRIPT.has(s.lang)) continue;
    const file = path.join(dir, s.title ?? `sample-${s.line}.ts`);
    if (!file.startsWith(dir + path.sep)) throw new Error(`${s.page}:${s.line}: the title leaves the folder`);
    if (files.has(file)) throw new Error(`${s.page}:${s.line}: a second sample named ${s.title}`);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, `${s.code}\n`);
    files.set(file, s);
  }
  return files;
}
