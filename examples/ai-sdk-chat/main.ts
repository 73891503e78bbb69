/**
 * Serves the chat app (server.ts) on a store, against a Chat Completions endpoint:
 *   OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_MODEL=llama3.1 \
 *     node --import tsx examples/ai-sdk-chat/main.ts [store URL]     (default sqlite:./.agentstate/chat.db)
 * Then open the printed address; reload mid-answer, the answer goes on.
 */
import { mkdirSync } from 'node:fs';
import { openStore } from '../../src/store/open.js';
import { startChatApp } from './server.js';

const url = process.argv[2] ?? 'sqlite:./.agentstate/chat.db';
if (url === 'sqlite:./.agentstate/chat.db') mkdirSync('.agentstate', { recursive: true });
const store = await openStore(url);
const app = await startChatApp({
  store,
  modelBaseURL: process.env.OPENAI_BASE_URL ?? 'http://127.0.0.1:11434/v1',
  modelName: process.env.OPENAI_MODEL ?? 'llama3.1',
  ...(process.env.OPENAI_API_KEY === undefined ? {} : { apiKey: process.env.OPENAI_API_KEY }),
  port: Number(process.env.PORT ?? 3000),
});
process.stdout.write(`chat on ${app.url} (store ${url})\n`);
const stop = async () => {
  await app.close();
  await store.close();
  process.exit(0);
};
process.once('SIGINT', () => void stop());
process.once('SIGTERM', () => void stop());
