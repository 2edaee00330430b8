/**
 * A markdown-it rule for the docs site: a relative link that leaves docs/
 * (`../BENCHMARKS.md`, `../src/config/schema.ts`) has no page on the site, so it
 * is pointed at the file in the repository. The same link keeps working where
 * the Markdown is read in the repository itself. Links inside docs/ are left to
 * VitePress, whose build fails on a dead one.
 *
 * A page that includes a file from outside docs/ (`<!--@include: ../../RELIABILITY.md-->`,
 * so the file stays where the repository's readers and tests expect it) gets
 * that file's links as written for its place: they are resolved from the
 * included file, then pointed at the site's page or at the repository. The
 * page's own links should then be absolute (`/internals/`).
 */
import path from 'node:path';
import type MarkdownIt from 'markdown-it';

interface PageEnv {
  relativePath?: string;
  path?: string;
  includes?: string[];
}

export function repositoryLinks(md: MarkdownIt, repository: string): void {
  md.core.ruler.push('jobvisor_repository_links', (state) => {
    const env = state.env as PageEnv;
    const page = env.relativePath;
    if (!page) return;
    const included = includedFile(env);
    for (const block of state.tokens) {
      for (const token of block.children ?? []) {
        if (token.type !== 'link_open') continue;
        const href = token.attrGet('href');
        if (!href) continue;
        if (included) {
          const link = fromIncluded(page, included, href);
          if (link?.site) token.attrSet('href', link.site);
          else if (link?.repository) token.attrSet('href', `${repository}/blob/main/${link.repository}`);
          continue;
        }
        const target = outsideDocs(page, href);
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

/**
 * A link written in `included` (a repository path outside docs/, e.g.
 * `BENCHMARKS.md`) and shown on `page` (relative to docs/): `site`, the link
 * from the page to a file of docs/; `repository`, the repository path of any
 * other file; null for absolute links and anchors, which are left alone.
 */
export function fromIncluded(
  page: string,
  included: string,
  href: string,
): { site?: string; repository?: string } | null {
  if (/^[a-z][a-z0-9+.-]*:|^[#/]/i.test(href)) return null;
  const [file = '', hash] = href.split('#');
  const inRepo = path.posix.normalize(path.posix.join(path.posix.dirname(included), file));
  const suffix = hash === undefined ? '' : `#${hash}`;
  if (inRepo.startsWith('docs/')) {
    const site = path.posix.relative(path.posix.dirname(path.posix.join('docs', page)), inRepo);
    return { site: `${site}${suffix}` };
  }
  return { repository: `${inRepo}${suffix}` };
}

/** The repository path of the file from outside docs/ that the page includes, if any. */
function includedFile(env: PageEnv): string | null {
  if (!env.path || !env.relativePath || !env.includes?.length) return null;
  const docs = env.path.slice(0, env.path.length - env.relativePath.length);
  const root = path.dirname(path.resolve(docs));
  for (const file of env.includes) {
    const rel = path.relative(root, path.resolve(file)).split(path.sep).join('/');
    if (!rel.startsWith('docs/') && !rel.startsWith('..')) return rel;
  }
  return null;
}
