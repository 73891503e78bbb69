/**
 * The chat app in headless Chromium (playwright-core) over a SQLite file, against the local Chat
 * Completions server: the model's long answer is held mid-way, the page is reloaded, and the answer goes
 * on to its end on the reloaded page (replayed from the run event log, then followed); a fresh page then
 * loads the stored chat.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChatStore } from '../../src/adapters/ai-sdk/index.js';
import { openStore } from '../../src/store/open.js';
import type { StateStore } from '../../src/store/types.js';
import {
  type ChatModelServer,
  LONG_STORY,
  startChatModelServer,
} from '../../test/adapters/ai-sdk/chat-model-server.js';
import { type ChatApp, startChatApp } from './server.js';

const SCOPE = { tenant_id: 'demo', user_id: 'guest' };
const dir = mkdtempSync(join(tmpdir(), 'agentstate-ai-sdk-chat-'));
let model: ChatModelServer;
let store: StateStore;
let app: ChatApp;
let browser: Browser;

beforeAll(async () => {
  model = await startChatModelServer();
  store = await openStore(`sqlite:${join(dir, 'chat.db')}`);
  app = await startChatApp({ store, modelBaseURL: model.baseURL, modelName: 'local', scope: SCOPE });
  browser = await chromium.launch({
    executablePath: process.env.AGENTSTATE_CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
    ],
  });
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await store?.close();
  await model?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function open(url: string): Promise<{ page: Page; problems: string[] }> {
  const page = await (await browser.newContext()).newPage();
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(error.message));
  await page.goto(url);
  await page.locator('body[data-loaded="true"]').waitFor();
  return { page, problems };
}

const assistant = (page: Page) => page.locator('li[data-role="assistant"]');

describe('examples/ai-sdk-chat', () => {
  it('a reload mid-answer shows the whole answer, and a fresh page loads the stored chat', async () => {
    const { page, problems } = await open(app.url);
    const chatUrl = page.url();
    expect(chatUrl).toMatch(/\?chat=sess_/);
    const chatId = new URL(chatUrl).searchParams.get('chat') as string;

    const hold = model.hold(60);
    await page.getByLabel('Message', { exact: true }).fill('Tell me a long story');
    await page.getByRole('button', { name: 'Send' }).click();
    await hold.reached;
    await expect.poll(() => assistant(page).textContent()).toMatch(/^Sentence 1 of the long story/);

    await page.reload();
    await page.locator('body[data-loaded="true"]').waitFor();
    // Replayed from the log: the part written before the reload is there again, and nothing is doubled.
    await expect.poll(() => assistant(page).textContent()).toMatch(/^Sentence 1 of the long story/);
    hold.release();
    await expect.poll(() => assistant(page).textContent(), { timeout: 15_000 }).toBe(LONG_STORY);
    await page.locator('body[data-status="ready"]').waitFor();
    expect(await page.locator('li[data-role="user"]').allTextContents()).toEqual(['Tell me a long story']);
    expect(await assistant(page).count()).toBe(1);

    const chats = createChatStore({ store, scope: SCOPE });
    await expect.poll(() => chats.activeStream(chatId)).toBeNull();
    const fresh = await open(chatUrl);
    expect(await fresh.page.locator('li').allTextContents()).toEqual(['Tell me a long story', LONG_STORY]);
    const stored = await chats.loadChat(chatId);
    expect(stored.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect([...problems, ...fresh.problems]).toEqual([]);
  });
});
