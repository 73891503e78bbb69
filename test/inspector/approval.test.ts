/**
 * Tool calls that need approval, decided in the inspector: the AI SDK chat store (a real `streamText`
 * against the local Chat Completions server) records three calls of `get_weather` as PENDING approvals on
 * the inspector server's store; in Chromium a person approves one and denies one with a reason on "Needs
 * attention", and denies the third without a reason on its session's page. The actions hold the
 * decisions in the shapes the chat store reads back, and the chat store sees them and carries them out.
 */

import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import {
  convertToModelMessages,
  jsonSchema,
  readUIMessageStream,
  stepCountIs,
  streamText,
  type ToolSet,
  tool,
  type UIMessage,
} from 'ai';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChatStore, type ChatTurn, createChatStore } from '../../src/adapters/ai-sdk/index.js';
import type { Scope } from '../../src/store/types.js';
import { type ChatModelServer, startChatModelServer } from '../adapters/ai-sdk/chat-model-server.js';
import {
  type InspectorServer,
  launchBrowser,
  openInspector,
  rand,
  screenshot,
  startInspectorServer,
} from './harness.js';

let server: InspectorServer;
let model: ChatModelServer;
let browser: Browser;

beforeAll(async () => {
  [server, model, browser] = await Promise.all([
    startInspectorServer(),
    startChatModelServer(),
    launchBrowser(),
  ]);
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
  await model?.close();
});

/** `get_weather`, which needs approval; `calls` lists the cities it ran for. */
function weatherTools() {
  const calls: string[] = [];
  const tools: ToolSet = {
    get_weather: tool({
      description: 'The weather in a city.',
      inputSchema: jsonSchema<{ city: string }>({
        type: 'object',
        properties: { city: { type: 'string' } },
        required: ['city'],
      }),
      needsApproval: true,
      execute: async ({ city }) => {
        calls.push(city);
        return { city, sky: 'sunny' };
      },
    }),
  };
  return { tools, calls };
}

/** Streams the turn's answer as a chat route would, to its end. */
async function answer(turn: ChatTurn, tools: ToolSet): Promise<void> {
  const result = streamText({
    model: createOpenAICompatible({ name: 'local', baseURL: model.baseURL }).chatModel('local'),
    tools,
    stopWhen: stepCountIs(4),
    messages: await convertToModelMessages(turn.messages, { tools }),
  });
  for await (const _ of readUIMessageStream({ stream: turn.stream(result.toUIMessageStream()) })) {
    // the client's view is not needed: the store keeps the answer
  }
  await turn.done;
}

/** A chat whose answer asks for approval of get_weather for `city`, with that approval's action id. */
async function askWeather(chats: ChatStore, tools: ToolSet, city: string) {
  const chatId = await chats.createChat();
  const message: UIMessage = {
    id: rand('u_'),
    role: 'user',
    parts: [{ type: 'text', text: `weather in ${city}` }],
  };
  await answer(await chats.startTurn(chatId, message), tools);
  const [approval] = await chats.pendingApprovals(chatId);
  if (approval === undefined) throw new Error(`the chat about ${city} asks for no approval`);
  return { chatId, actionId: approval.actionId };
}

/** The approval of the chat's last answer as `loadChat` shows it. */
async function shownApproval(chats: ChatStore, chatId: string, tools: ToolSet) {
  const last = (await chats.loadChat(chatId, { tools })).at(-1);
  return last?.parts.find((part) => part.type === 'tool-get_weather') as
    | { state: string; approval?: { approved?: boolean; reason?: string } }
    | undefined;
}

function badge(page: Page): Locator {
  return page.getByRole('navigation', { name: 'Main' }).locator('.count');
}

describe('inspector: tool calls waiting for approval', () => {
  it('approves and denies chat tool calls from Needs attention and the session page', async () => {
    const scope: Scope = { tenant_id: server.tenant, user_id: rand('traveller') };
    const chats = createChatStore({ store: server.store, scope });
    const { tools, calls } = weatherTools();
    const paris = await askWeather(chats, tools, 'Paris');
    const rome = await askWeather(chats, tools, 'Rome');
    const oslo = await askWeather(chats, tools, 'Oslo');
    expect((await server.store.getSession(scope, paris.chatId))?.status).toBe('waiting_for_user');

    const page = await openInspector(browser, server, server.key);
    await badge(page).filter({ hasText: '3' }).waitFor();
    await page.getByRole('link', { name: /Needs attention/ }).click();
    const section = page.locator('section[aria-labelledby="approvals-title"]');
    await section.getByRole('heading', { name: 'Waiting for approval (3)' }).waitFor();
    const row = (id: string) => section.locator(`li[data-action="${id}"]`);
    await expect(row(paris.actionId).textContent()).resolves.toMatch(/get_weather[\s\S]*"city": "Paris"/);
    await row(paris.actionId).locator(`a[href="#/sessions/${paris.chatId}"]`).waitFor();
    await screenshot(page, 'approvals-waiting');

    await row(paris.actionId).getByRole('button', { name: 'Approve get_weather' }).click();
    await row(paris.actionId).waitFor({ state: 'detached' });
    await row(rome.actionId).getByLabel('Reason for denying (optional)').fill('Rome is not on the trip.');
    await row(rome.actionId).getByRole('button', { name: 'Deny get_weather' }).click();
    await row(rome.actionId).waitFor({ state: 'detached' });
    await section.getByRole('heading', { name: 'Waiting for approval (1)' }).waitFor();
    await badge(page).filter({ hasText: '1' }).waitFor();

    // The third on its session's page: the approval's task card has the same buttons.
    await page.goto(`${server.url}/#/sessions/${oslo.chatId}`);
    const card = page.locator(`article.task-state [data-action="${oslo.actionId}"]`);
    await expect(card.textContent()).resolves.toContain('"city": "Oslo"');
    await screenshot(page, 'approval-session');
    await card.getByRole('button', { name: 'Deny get_weather' }).click();
    await card.waitFor({ state: 'detached' });
    await badge(page).waitFor({ state: 'detached' });
    await page.getByRole('link', { name: /Needs attention/ }).click();
    await section.getByText('No tool call waits for approval.').waitFor();
    await screenshot(page, 'approvals-decided');
    expect((page as Page & { problems?: string[] }).problems).toEqual([]);
    await page.context().close();

    // The actions hold the decisions in the chat store's shapes...
    const stored = async (id: string) => server.store.getAction(scope, id);
    expect(await stored(paris.actionId)).toMatchObject({
      status: 'SUCCESS',
      result: { approved: true },
      note: 'approved in the inspector',
    });
    expect(await stored(rome.actionId)).toMatchObject({
      status: 'FAILED',
      error: { code: 'denied', message: 'Rome is not on the trip.' },
      note: 'denied in the inspector: Rome is not on the trip.',
    });
    expect(await stored(oslo.actionId)).toMatchObject({
      status: 'FAILED',
      error: { code: 'denied', message: 'The tool call was denied.' },
    });

    // ...the chat store reads them back...
    expect(await chats.pendingApprovals(paris.chatId)).toMatchObject([
      { actionId: paris.actionId, toolName: 'get_weather', decision: { approved: true } },
    ]);
    expect(await chats.pendingApprovals(rome.chatId)).toMatchObject([
      { actionId: rome.actionId, decision: { approved: false, reason: 'Rome is not on the trip.' } },
    ]);
    expect(await shownApproval(chats, paris.chatId, tools)).toMatchObject({
      state: 'approval-responded',
      approval: { approved: true },
    });
    expect(await shownApproval(chats, rome.chatId, tools)).toMatchObject({
      state: 'approval-responded',
      approval: { approved: false, reason: 'Rome is not on the trip.' },
    });

    // ...and carries them out: only the approved call runs.
    for (const chat of [paris, rome, oslo])
      await answer(await chats.continueTurn(chat.chatId, { tools }), tools);
    expect(calls).toEqual(['Paris']);
    expect((await shownApproval(chats, paris.chatId, tools))?.state).toBe('output-available');
    expect((await shownApproval(chats, rome.chatId, tools))?.state).toBe('output-denied');
    expect((await server.store.getSession(scope, rome.chatId))?.status).toBe('active');
  });
});
