/**
 * The package root's createDashboard (deprecated; src/dashboard/lazy.ts) does
 * what jobvisor/dashboard's does: it refuses bad options at once, with the same
 * errors, and then serves the same dashboard, as a Node listener and as a
 * fetch handler, once it has loaded it. No database: the pages it fetches
 * (static assets, login, a refused Host) read none.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import { createDashboard as real } from '../../src/entry/dashboard.ts';
import { createDashboard } from '../../src/index.ts';

const pool = new pg.Pool({ connectionString: 'postgres://nobody@127.0.0.1:1/none' });
const servers: Server[] = [];
after(async () => {
  for (const s of servers) await new Promise((resolve) => s.close(resolve));
  await pool.end();
});

describe("the package root's createDashboard", () => {
  it('refuses what the real one refuses, at once, with the same error', () => {
    const saved = { ...process.env };
    delete process.env.JOBVISOR_DASHBOARD_TOKEN;
    delete process.env.JOBVISOR_DASHBOARD_TOKEN_FILE;
    try {
      for (const options of [{ pool, basePath: 'admin', auth: false as const }, { pool }]) {
        const expected = (() => {
          try {
            real(options);
          } catch (err) {
            return err as Error;
          }
          assert.fail(`the real createDashboard accepted ${JSON.stringify(options.basePath)}`);
        })();
        assert.throws(() => createDashboard(options), { name: expected.name, message: expected.message });
      }
    } finally {
      process.env = saved;
    }
    assert.equal(createDashboard({ pool, basePath: '/jobs-admin/', auth: false }).basePath, '/jobs-admin');
  });

  it('serves the same responses as the real one, through fetch and as a Node listener', async () => {
    const options = { pool, basePath: '/admin', auth: { token: 'a-token-of-sixteen-chars' } };
    const lazy = createDashboard(options);
    const eager = real(options);
    for (const url of [
      'http://localhost/admin/static/app.css',
      'http://localhost/admin/login',
      'http://localhost/admin/jobs',
    ]) {
      const [a, b] = await Promise.all([lazy.fetch(new Request(url)), eager.fetch(new Request(url))]);
      assert.equal(a.status, b.status, url);
      assert.equal(a.headers.get('content-type'), b.headers.get('content-type'), url);
      assert.equal(await a.text(), await b.text(), url);
    }
    const server = createServer((req, res) => lazy(req, res, () => res.writeHead(418).end('next')));
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const css = await fetch(`${base}/admin/static/app.css`);
    assert.equal(css.status, 200);
    assert.match(css.headers.get('content-type') ?? '', /text\/css/);
    assert.ok((await css.text()).length > 100);
    const outside = await fetch(`${base}/elsewhere`);
    assert.deepEqual(
      [outside.status, await outside.text()],
      [418, 'next'],
      'a path outside basePath goes on to next()',
    );
  });
});
