/**
 * The inspector follows the open session's live events: with the page polling only once a minute, a turn
 * sent over HTTP by another client shows on the page (its reply in the chat, the task's state and slots)
 * within moments, which only the session's event stream (GET /v1/sessions/{id}/events, read with fetch
 * streaming and the page's token) can explain.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LinkedRuntime, linkRuntime } from '../../src/cli/commands/runtime-link.js';
import type { Session } from '../../src/core/model.js';
import { resolveConfig } from '../../src/http/config.js';
import type { ZodApp } from '../../src/http/deps.js';
import { createServer } from '../../src/http/server.js';
import { openStore } from '../../src/store/open.js';
import type { StateStore } from '../../src/store/types.js';
import { type InspectorServer, launchBrowser, openInspector, rand } from './harness.js';

const POLL_MS = 60_000;
const dataDir = mkdtempSync(join(tmpdir(), 'agentstate-inspector-live-'));
const key = rand('key-inspector-live-0123456789-');
let store: StateStore;
let runtime: LinkedRuntime;
let app: ZodApp;
let url: string;
let browser: Browser;

beforeAll(async () => {
  store = await openStore('memory:');
  runtime = await linkRuntime(dataDir);
  app = await createServer({
    store,
    config: resolveConfig({ apiKeys: { [key]: rand('tenant') }, jwtSecret: randomBytes(32).toString('hex') }),
    logger: false,
    agents: runtime.setup,
    inspector: { pollMs: POLL_MS },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  const closing = app.close();
  app.server.closeAllConnections();
  await closing;
  await runtime.close();
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return JSON.parse(text) as T;
}

describe('inspector: the open session follows its live events', () => {
  it('shows a turn sent by another client at once, with polling set to once a minute', async () => {
    const session = await api<Session>('POST', '/v1/sessions', {
      user_id: rand('ada'),
      agent: 'flight_booking',
    });
    const page: Page = await openInspector(browser, { url } as InspectorServer, key);
    try {
      const sessionReads: number[] = [];
      page.on('request', (request) => {
        if (new URL(request.url()).pathname === `/v1/sessions/${session.id}`) sessionReads.push(Date.now());
      });
      await expect(page.locator('footer').textContent()).resolves.toContain('every 60 s');
      await page.goto(`${url}/#/sessions/${session.id}`);
      await page.getByTestId('session-head').getByText(session.user_id).waitFor();
      await page.locator('[data-testid="live-status"][data-state="live"]').waitFor({ timeout: 10_000 });
      await expect(page.getByTestId('chat-log').locator('li').count()).resolves.toBe(0);
      const readsBefore = sessionReads.length;

      const sent = Date.now();
      const turn = await api<{ reply: string }>('POST', `/v1/sessions/${session.id}/turns`, {
        input: 'I need a flight to Shenzhen',
      });
      expect(turn.reply).toMatch(/Where are you flying from\?/);
      const chat = page.getByTestId('chat-log');
      await chat.locator('li.user', { hasText: 'I need a flight to Shenzhen' }).waitFor({ timeout: 10_000 });
      await chat
        .locator('li.assistant', { hasText: 'Where are you flying from?' })
        .waitFor({ timeout: 10_000 });
      const tasks = page.locator('section[aria-labelledby="tasks-title"]');
      await tasks.locator('svg[data-state="COLLECTING"]').waitFor({ timeout: 10_000 });
      await expect(tasks.getByTestId('slots').textContent()).resolves.toMatch(/SZX|Shenzhen/);
      // Well within the minute between polls: the stream's events made the page read the session again.
      expect(Date.now() - sent).toBeLessThan(POLL_MS / 2);
      expect(sessionReads.length).toBeGreaterThan(readsBefore);
      expect(sessionReads.filter((at) => at >= sent).length).toBeGreaterThan(0);
      // The streamed reply gave way to the stored message: one assistant bubble.
      await expect(chat.locator('li.assistant').count()).resolves.toBe(1);
      await expect(page.getByTestId('streaming-reply').count()).resolves.toBe(0);

      // A second turn, sent from the page itself, shows the same way.
      await page.getByLabel('Message to the agent').fill('from Chengdu, on Dec 20');
      await page.getByRole('button', { name: 'Send' }).click();
      await chat.locator('li.assistant', { hasText: 'Which cabin class' }).waitFor({ timeout: 10_000 });
      expect((page as Page & { problems?: string[] }).problems).toEqual([]);
    } finally {
      await page.context().close();
    }
  });
});
