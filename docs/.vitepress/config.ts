/**
 * The docs site (VitePress): `npm run docs:dev` serves docs/ with live reload,
 * `npm run docs:build` writes the static site to docs/.vitepress/dist (ignored by git).
 * Search is VitePress's local index (minisearch), built into the site: no service.
 * The sidebar's sections are the site's contract with readers; test/packaging/docs_site.test.ts
 * opens the built site in Chromium and follows every internal link.
 */
import { defineConfig } from 'vitepress';
import { repositoryLinks } from '../../scripts/docs-repository-links.ts';

/** Placeholder until the project has a public repository (package.json says the same). */
export const REPOSITORY = 'https://github.com/example/jobvisor';

export default defineConfig({
  title: 'jobvisor',
  description: 'Durable background jobs for Node.js services on PostgreSQL.',
  // A dead internal link fails the build (VitePress's default, stated here on purpose).
  ignoreDeadLinks: false,
  cleanUrls: false,
  lastUpdated: false,
  srcExclude: ['**/README.md'],
  markdown: {
    // Links that leave docs/ (../src/…, ../BENCHMARKS.md) point into the repository.
    config: (md) => repositoryLinks(md, REPOSITORY),
  },
  themeConfig: {
    search: { provider: 'local' },
    nav: [
      { text: 'Getting started', link: '/getting-started/' },
      { text: 'Guides', link: '/guides/' },
      { text: 'Operations', link: '/operations/' },
      { text: 'Reference', link: '/reference/' },
      { text: 'Internals', link: '/internals/' },
    ],
    sidebar: [
      {
        text: 'Getting started',
        items: [{ text: 'Your first job in five minutes', link: '/getting-started/' }],
      },
      {
        text: 'Guides',
        items: [
          { text: 'Overview', link: '/guides/' },
          { text: 'Batch tasks', link: '/guides/batches' },
          { text: 'Entry points', link: '/guides/entry-points' },
        ],
      },
      {
        text: 'Operations',
        items: [{ text: 'Overview', link: '/operations/' }],
      },
      {
        text: 'Reference',
        items: [
          { text: 'Overview', link: '/reference/' },
          { text: 'API', link: '/reference/api' },
          { text: 'Command line', link: '/reference/cli' },
          { text: 'Configuration', link: '/reference/configuration' },
          { text: 'Events', link: '/reference/events' },
          { text: 'Metrics', link: '/reference/metrics' },
        ],
      },
      {
        text: 'Internals',
        items: [
          { text: 'Overview', link: '/internals/' },
          { text: 'Architecture', link: '/ARCHITECTURE' },
          { text: 'Benchmarks history', link: '/benchmarks-history' },
        ],
      },
    ],
    socialLinks: [{ icon: 'github', link: REPOSITORY }],
  },
});
