/**
 * A durable chat turn in a process of its own, for the crash test (durable-chat.test.ts kills it with
 * SIGKILL once its booking is in the ledger, before the tool returns and its step is stored). Usage:
 * durable-chat-child.ts <store url> <tenant> <user> <chat id> <model base URL> <ledger file> <text>.
 * Prints `booked` once the booking is written, then waits to be killed.
 */
import { openStore } from '../../../src/store/open.js';
import { bookingChat } from './durable-chat-app.js';

const [url, tenant, user, chatId, baseURL, ledger, text] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string,
  string,
];
const store = await openStore(url);
const chats = bookingChat({
  store,
  scope: { tenant_id: tenant, user_id: user },
  modelBaseURL: baseURL,
  ledger,
  leaseMs: 600,
  afterBooking: async () => {
    process.stdout.write('booked\n');
    await new Promise(() => undefined);
  },
});
const turn = await chats.startTurn(chatId, { id: 'u_book', role: 'user', parts: [{ type: 'text', text }] });
const reader = turn.answer().getReader();
while (!(await reader.read()).done) {
  // read to the end (the test kills the process long before)
}
