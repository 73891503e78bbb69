/**
 * The writer of a chat stream in a process of its own, for the crash test (chat-store.test.ts kills it
 * with SIGKILL mid-answer). Usage: chat-crash-child.ts <store url> <tenant> <user> <chat id> <model base
 * URL> <text>. Prints `started <run id>` once the turn is claimed.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { convertToModelMessages, streamText } from 'ai';
import { createChatStore } from '../../../src/adapters/ai-sdk/index.js';
import { openStore } from '../../../src/store/open.js';

const [url, tenant, user, chatId, baseURL, text] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string,
];
const store = await openStore(url);
const chats = createChatStore({ store, scope: { tenant_id: tenant, user_id: user }, leaseMs: 600 });
const turn = await chats.startTurn(chatId, { id: 'u_crash', role: 'user', parts: [{ type: 'text', text }] });
process.stdout.write(`started ${turn.runId}\n`);
const model = createOpenAICompatible({ name: 'local', baseURL }).chatModel('local');
const result = streamText({ model, messages: await convertToModelMessages(turn.messages), maxRetries: 0 });
const reader = turn.stream(result.toUIMessageStream()).getReader();
while (!(await reader.read()).done) {
  // read to the end (the test kills the process long before)
}
await turn.done;
await store.close();
