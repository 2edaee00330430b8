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
        items: [
          { text: 'Your first job in five minutes', link: '/getting-started/' },
          { text: 'Use it in your service', link: '/getting-started/service' },
          { text: 'Install: what the package brings', link: '/getting-started/install' },
          { text: 'The checkout: demo and tests', link: '/getting-started/checkout' },
        ],
      },
      {
        text: 'Guides',
        items: [
          { text: 'Overview', link: '/guides/' },
          { text: 'Enqueueing', link: '/guides/enqueueing' },
          { text: 'Tasks', link: '/guides/tasks' },
          { text: 'Tasks and CPU work', link: '/guides/cpu-work' },
          { text: 'Retries and idempotency', link: '/guides/retries' },
          { text: 'Built-in tasks', link: '/guides/builtin-tasks' },
          { text: 'Schedules', link: '/guides/schedules' },
          { text: 'Flow control', link: '/guides/flow-control' },
          { text: 'Workflows', link: '/guides/workflows' },
          { text: 'Configuration', link: '/guides/configuration' },
          { text: 'The command line', link: '/guides/command-line' },
          { text: 'Batch tasks', link: '/guides/batches' },
          { text: 'Steps, sleeps and signals', link: '/guides/steps' },
          { text: 'Entry points', link: '/guides/entry-points' },
        ],
      },
      {
        text: 'Operations',
        items: [
          { text: 'Overview', link: '/operations/' },
          { text: 'Kubernetes', link: '/operations/kubernetes' },
          { text: 'Images', link: '/operations/image' },
          { text: 'Cluster mode', link: '/operations/cluster' },
          { text: 'Metrics, health and logs', link: '/operations/metrics' },
          { text: 'Tracing', link: '/operations/tracing' },
          { text: 'The web dashboard', link: '/operations/dashboard' },
          { text: 'PostgreSQL in production', link: '/operations/postgresql' },
        ],
      },
      {
        text: 'Reference',
        items: [
          { text: 'Overview', link: '/reference/' },
          { text: 'API', link: '/reference/api' },
          { text: 'Admin API', link: '/reference/admin' },
          { text: 'Command line', link: '/reference/cli' },
          { text: 'Configuration', link: '/reference/configuration' },
          { text: 'Events', link: '/reference/events' },
          { text: 'Metrics', link: '/reference/metrics' },
          { text: 'SQL schema and statuses', link: '/reference/schema' },
        ],
      },
      {
        text: 'Internals',
        items: [
          { text: 'Overview', link: '/internals/' },
          { text: 'Architecture', link: '/ARCHITECTURE' },
          { text: 'How it works', link: '/internals/how-it-works' },
          { text: 'Figures in short', link: '/internals/figures' },
          { text: 'Benchmarks', link: '/internals/benchmarks' },
          { text: 'Benchmarks archive', link: '/internals/benchmarks-archive' },
          { text: 'Benchmarks history', link: '/benchmarks-history' },
          { text: 'Reliability', link: '/internals/reliability' },
          { text: 'Development', link: '/internals/development' },
        ],
      },
    ],
    socialLinks: [{ icon: 'github', link: REPOSITORY }],
  },
});
