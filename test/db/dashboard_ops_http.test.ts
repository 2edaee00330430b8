/**
 * Over real HTTP: the security headers come from Hono's secure-headers (with
 * the dashboard's CSP and no HSTS), schedules show their time zone and fire
 * times in it, and the stylesheet carries the dark palette and narrow layout.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { serveTestDashboard, type ServedDashboard } from '../helpers/dashboard.ts';

describe('dashboard headers, schedules and style over HTTP', () => {
  let t: TestDatabase;
  let d: ServedDashboard;

  before(async () => {
    t = await createTestDatabase();
    d = await serveTestDashboard({
      pool: t.pool,
      auth: false,
      schedules: [
        {
          name: 'paris_morning',
          cron: '0 7 * * *',
          kind: 'daily_report',
          payload: {},
          queue: 'default',
          priority: 0,
          timezone: 'Europe/Paris',
        },
      ],
    });
  });
  after(async () => {
    await d?.close();
    await t?.drop();
  });

  it("sends secure-headers' set with the dashboard's CSP, no-store, and no HSTS", async () => {
    const res = await fetch(d.url);
    const h = res.headers;
    assert.equal(
      h.get('content-security-policy'),
      "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    assert.equal(h.get('x-frame-options'), 'DENY');
    assert.equal(h.get('referrer-policy'), 'same-origin');
    assert.equal(h.get('x-content-type-options'), 'nosniff');
    assert.equal(h.get('cross-origin-opener-policy'), 'same-origin');
    assert.equal(h.get('cache-control'), 'no-store');
    assert.equal(h.get('strict-transport-security'), null, 'a plain-http loopback server must not send HSTS');
  });

  it('shows a schedule written for Europe/Paris with its zone and its fire times at 07:00 there', async () => {
    const html = await (await fetch(`${d.url}schedules`)).text();
    const row = /<tr>\s*<td>paris_morning<\/td>[\s\S]*?<\/tr>/.exec(html)?.[0] ?? '';
    assert.match(row, /<td>Europe\/Paris<\/td>/);
    const fires = [...row.matchAll(/<span title="(\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ)">([^<]+)<\/span>/g)];
    assert.equal(fires.length, 3, row);
    for (const [, utc, local] of fires) {
      assert.match(local ?? '', /^\d{4}-\d\d-\d\d 07:00:00 GMT\+[12]$/, 'wall-clock time in Paris');
      assert.match(utc ?? '', / 0[56]:00:00Z$/, 'the UTC instant in the title');
    }
  });

  it('serves a dark palette and a narrow layout in the stylesheet', async () => {
    const css = await (await fetch(`${d.url}static/app.css`)).text();
    assert.match(css, /@media \(prefers-color-scheme: dark\)/);
    assert.match(css, /@media \(max-width: 640px\)[\s\S]*table\.stack/);
  });
});
