/**
 * DNS rebinding against the open loopback dashboard, in Debian's Chromium.
 * `--host-resolver-rules` maps evil.test to 127.0.0.1, as a rebinding DNS
 * server would once the attacker's page has loaded: a script in a page of
 * http://evil.test:PORT then calls its own origin, which is the dashboard. The
 * browser sends `Host: evil.test:PORT` and a matching Origin, so only the
 * dashboard's Host check stands between the page and a job's payload. (The
 * page is loaded from that address too, so Chromium's own Private Network
 * Access rules, which other browsers lack, play no part.)
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { seedDeadLetters, serveTestDashboard, type ServedDashboard } from '../helpers/dashboard.ts';
import { launchChromium } from '../helpers/browser.ts';
import { CHROMIUM, skipUnless } from '../helpers/tools.ts';

const IBAN = 'DE89370400440532013000';

/** The attacker's script, run in a page of the given origin: read the job's page, then delete the job. */
async function attack(
  id: string,
): Promise<{ readStatus?: number; read?: string; deleteStatus?: number; error?: string }> {
  const out: { readStatus?: number; read?: string; deleteStatus?: number; error?: string } = {};
  try {
    const page = await fetch(`/jobs/${id}`);
    out.readStatus = page.status;
    out.read = await page.text();
    const del = await fetch(`/jobs/${id}/delete`, { method: 'POST' });
    out.deleteStatus = del.status;
  } catch (err) {
    out.error = String(err);
  }
  return out;
}

describe('DNS rebinding in a real browser', { skip: skipUnless(CHROMIUM), timeout: 120_000 }, () => {
  let t: TestDatabase;
  let d: ServedDashboard;
  let browser: Browser;

  before(async () => {
    t = await createTestDatabase();
    d = await serveTestDashboard({ pool: t.pool, auth: false });
    browser = await launchChromium(['--host-resolver-rules=MAP evil.test 127.0.0.1']);
  });
  after(async () => {
    await browser?.close();
    await d?.close();
    await t?.drop();
  });

  const attackFrom = async (origin: string, id: string) => {
    const page = await browser.newPage();
    try {
      // Any document of that origin will do: its scripts act with the origin's rights.
      await page.goto(`${origin}/`);
      return await page.evaluate(attack, id);
    } finally {
      await page.close();
    }
  };
  const exists = async (id: string) =>
    (await t.pool.query('SELECT 1 FROM jobvisor.jobs WHERE id = $1', [id])).rowCount === 1;

  it('a page at evil.test reaches the dashboard but can neither read a payload nor delete a job', async () => {
    const [id] = (await seedDeadLetters(t.pool, { kind: 'payout', count: 1, payload: { iban: IBAN } })) as [string];
    const port = new URL(d.origin).port;
    const r = await attackFrom(`http://evil.test:${port}`, id);
    assert.equal(r.error, undefined, 'the requests reached the server');
    assert.equal(r.readStatus, 403, 'refused by the Host check');
    assert.doesNotMatch(r.read ?? '', new RegExp(IBAN));
    assert.equal(r.deleteStatus, 403);
    assert.ok(await exists(id), 'the job is still there');
  });

  it('the same script from the dashboard’s own loopback origin works (the attack itself is sound)', async () => {
    const [id] = (await seedDeadLetters(t.pool, { kind: 'payout', count: 1, payload: { iban: IBAN } })) as [string];
    const r = await attackFrom(`http://localhost:${new URL(d.origin).port}`, id);
    assert.equal(r.readStatus, 200);
    assert.match(r.read ?? '', new RegExp(IBAN));
    assert.equal(r.deleteStatus, 200, 'deleted, then the redirect to the list');
    assert.ok(!(await exists(id)));
  });
});
