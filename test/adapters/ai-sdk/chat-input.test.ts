/**
 * `createChatStore` input and claims: a chat id that is not a session id, a message that is not a UI
 * message, a chat of another tenant, bad options, and a second answer while one streams.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { convertToModelMessages, streamText, type UIMessage } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChatStore } from '../../../src/adapters/ai-sdk/index.js';
import { openStore } from '../../../src/store/open.js';
import { freshScope } from '../stores.js';
import { type ChatModelServer, startChatModelServer } from './chat-model-server.js';

let model: ChatModelServer;
beforeAll(async () => {
  model = await startChatModelServer();
});
afterAll(() => model.close());

const languageModel = () =>
  createOpenAICompatible({ name: 'local', baseURL: model.baseURL }).chatModel('local');

function userMessage(text: string): UIMessage {
  return { id: `u_${Math.random().toString(36).slice(2)}`, role: 'user', parts: [{ type: 'text', text }] };
}

describe('chat store input', () => {
  it('refuses a chat id that is not a session id, and a message that is not a UI message', async () => {
    const store = await openStore('memory:');
    try {
      const chats = createChatStore({ store, scope: freshScope() });
      await expect(chats.loadChat('../etc')).rejects.toMatchObject({ code: 'invalid_request' });
      const chatId = await chats.createChat();
      await expect(chats.startTurn(chatId, { role: 'user', text: 'hi' })).rejects.toMatchObject({
        code: 'invalid_request',
      });
      await expect(chats.startTurn(chatId, undefined)).rejects.toMatchObject({ code: 'invalid_request' });
      const otherUser = createChatStore({ store, scope: { ...freshScope(), tenant_id: 'other' } });
      await expect(otherUser.loadChat(chatId)).rejects.toMatchObject({ code: 'not_found' });
      expect(() => createChatStore({ store, scope: freshScope(), leaseMs: -1 })).toThrow(/leaseMs/);
    } finally {
      await store.close();
    }
  });

  it('refuses a second stream while one runs', async () => {
    const store = await openStore('memory:');
    try {
      const chats = createChatStore({ store, scope: freshScope() });
      const chatId = await chats.createChat();
      const hold = model.hold(2);
      const turn = await chats.startTurn(chatId, userMessage('Tell me a long story'));
      const result = streamText({
        model: languageModel(),
        messages: await convertToModelMessages(turn.messages),
        maxRetries: 0,
      });
      await turn.stream(result.toUIMessageStream()).cancel();
      await hold.reached;
      await expect(chats.startTurn(chatId, userMessage('hi'))).rejects.toMatchObject({ code: 'conflict' });
      hold.release();
      await turn.done;
      const again = await chats.startTurn(chatId, userMessage('hi'));
      await again.fail(new Error('not answered in this test'));
      expect(await chats.activeStream(chatId)).toBeNull();
    } finally {
      await store.close();
    }
  });
});
