/**
 * What the inspector shows is what the token may see: with a user token the page lists that user's
 * sessions only, never another user's (not in the table, not in any API answer the page received), and
 * opening another user's session by id shows the API's 404. Without configured keys (loopback), the page
 * and its assets are served without a token, with a Content-Security-Policy that allows this origin only.
 */
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Session } from '../../src/core/model.js';
import { createServer } from '../../src/http/server.js';
import { openStore } from '../../src/store/open.js';
import {
  apiCall,
  type InspectorServer,
  launchBrowser,
  openInspector,
  rand,
  screenshot,
  startInspectorServer,
} from './harness.js';

let server: InspectorServer;
let browser: Browser;

beforeAll(async () => {
  server = await startInspectorServer();
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe('inspector: scope', () => {
  it("a user token never shows another user's sessions", async () => {
    const alice = rand('alice');
    const bob = rand('bob');
    const create = (user: string, agent: string) =>
      apiCall<Session>(server, 'POST', '/v1/sessions', { user_id: user, agent });
    const mine = [await create(alice, 'flight_booking'), await create(alice, 'deploy_pipeline')];
    const theirs = [await create(bob, 'flight_booking'), await create(bob, 'deploy_pipeline')];
    await apiCall(server, 'POST', `/v1/sessions/${theirs[0]?.id}/turns`, {
      input: 'I need a flight to Paris',
    });

    const page = await openInspector(browser, server, await server.token(alice));
    const bodies: string[] = [];
    page.on('response', async (response) => {
      if (new URL(response.url()).pathname.startsWith('/v1/'))
        bodies.push(await response.text().catch(() => ''));
    });
    // The first list may have loaded before the listener: wait for the next poll of the list.
    await page.waitForResponse((response) => new URL(response.url()).pathname === '/v1/sessions');
    expect(await page.getByTestId('who').textContent()).toContain(`user ${alice}`);
    for (const session of mine) await page.locator(`tr[data-session="${session.id}"]`).waitFor();
    const listed = await page
      .locator('tr[data-session]')
      .evaluateAll((rows) => rows.map((row) => row.getAttribute('data-session')));
    expect(listed.sort()).toEqual(mine.map((s) => s.id).sort());
    expect(await page.getByLabel('User', { exact: true }).count()).toBe(0);
    expect(await page.getByTestId('counts').textContent()).toContain('2');
    await screenshot(page, 'user-token-sessions');

    // Another user's session by id: the API's 404, nothing of it on the page.
    await page.getByLabel('Open by id').fill(theirs[0]?.id as string);
    await page.getByRole('button', { name: 'Open' }).click();
    await page
      .getByRole('alert')
      .getByText(/404 not_found/)
      .waitFor();
    await page.getByRole('link', { name: /Needs attention/ }).click();
    await page.locator('section[aria-labelledby="unknown-title"]').waitFor();
    await page.waitForTimeout(1200);

    expect(bodies.length).toBeGreaterThan(3);
    const seen = bodies.join('\n');
    expect(seen).toContain(alice);
    expect(seen).not.toContain(bob);
    // The id the user typed comes back only in the 404 that says nothing else about it.
    const records = bodies.filter((body) => !body.startsWith('{"error":{"code":"not_found"'));
    for (const session of theirs) expect(records.join('\n')).not.toContain(session.id);
    expect(await page.content()).not.toContain(bob);
    await page.context().close();
  });

  it('without keys, on loopback, the page and its assets need no token and load only from this origin', async () => {
    const store = await openStore('memory:');
    const app = await createServer({ store, logger: false });
    await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
      const page = await fetch(`${base}/`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toContain('text/html');
      expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
      expect(page.headers.get('content-security-policy')).toContain("connect-src 'self'");
      const html = await page.text();
      expect(html).toContain('/inspector/app.js');
      expect(html).not.toMatch(/https?:\/\//);
      const js = await fetch(`${base}/inspector/app.js`);
      expect(js.headers.get('content-type')).toContain('javascript');
      expect((await js.text()).length).toBeGreaterThan(10_000);
      const css = await fetch(`${base}/inspector/app.css`);
      expect(css.headers.get('content-type')).toContain('text/css');
      const openapi = (await (await fetch(`${base}/openapi.json`)).json()) as {
        paths: Record<string, unknown>;
      };
      expect(Object.keys(openapi.paths)).not.toContain('/inspector/app.js');
    } finally {
      await app.close();
      await store.close();
    }
  });
});
