/**
 * A markdown-it rule for the docs site: a relative link that leaves docs/
 * (`../BENCHMARKS.md`, `../src/config/schema.ts`) has no page on the site, so it
 * is pointed at the file in the repository. The same link keeps working where
 * the Markdown is read in the repository itself. Links inside docs/ are left to
 * VitePress, whose build fails on a dead one.
 */
import path from 'node:path';
import type MarkdownIt from 'markdown-it';

export function repositoryLinks(md: MarkdownIt, repository: string): void {
  md.core.ruler.push('jobvisor_repository_links', (state) => {
    const page = (state.env as { relativePath?: string }).relativePath;
    if (!page) return;
    for (const block of state.tokens) {
      for (const token of block.children ?? []) {
        if (token.type !== 'link_open') continue;
        const href = token.attrGet('href');
        const target = href ? outsideDocs(page, href) : null;
        if (target) token.attrSet('href', `${repository}/blob/main/${target}`);
      }
    }
  });
}

/** The repository path a link from `page` (relative to docs/) points to, when it leaves docs/; else null. */
export function outsideDocs(page: string, href: string): string | null {
  if (/^[a-z][a-z0-9+.-]*:|^[#/]/i.test(href)) return null;
  const [file = '', hash] = href.split('#');
  const inRepo = path.posix.normalize(path.posix.join('docs', path.posix.dirname(page), file));
  if (inRepo === 'docs' || inRepo.startsWith('docs/') || inRepo.startsWith('..')) return null;
  return hash === undefined ? inRepo : `${inRepo}#${hash}`;
}
