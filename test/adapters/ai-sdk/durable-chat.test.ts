/**
 * Durable chat turns (`createChatStore({ answer })`, `turn.answer()`): a real `streamText` against the
 * local Chat Completions server, its model answers recorded as steps of the turn's durable run and its
 * `book_flight` calls actions with idempotency keys. A turn whose process is SIGKILLed after its booking
 * took effect, before the tool returned and the step was stored, is resumed by the client that comes back
 * (`resumeStream`): the recorded model answer is replayed, the booking is found again through `lookup`
 * (one line in the ledger), and the answer completes.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHAT_RUN_NAME } from '../../../src/adapters/ai-sdk/index.js';
import { freshScope, type OpenedStore, openTestStore, type StoreName } from '../stores.js';
import { type ChatModelServer, startChatModelServer } from './chat-model-server.js';
import { bookingChat, ledgerOf } from './durable-chat-app.js';

const CRASH_STORES: StoreName[] = [
  'sqlite',
  ...(process.env.AGENTSTATE_TEST_POSTGRES_URL ? (['postgres'] as const) : []),
];

let model: ChatModelServer;
let dir: string;
beforeAll(async () => {
  model = await startChatModelServer();
  dir = mkdtempSync(join(tmpdir(), 'agentstate-durable-chat-'));
});
afterAll(async () => {
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

async function clientMessage(stream: ReadableStream<UIMessageChunk>): Promise<UIMessage | undefined> {
  let last: UIMessage | undefined;
  for await (const message of readUIMessageStream({ stream, terminateOnError: false, onError: () => {} }))
    last = message;
  return last;
}

function textOf(message: UIMessage | undefined): string {
  return (message?.parts ?? []).map((part) => (part.type === 'text' ? part.text : '')).join('');
}

type ToolView = { type: string; state: string; output?: unknown };

function bookingPart(message: UIMessage | undefined): ToolView | undefined {
  return message?.parts.find((part) => part.type === 'tool-book_flight') as ToolView | undefined;
}

/** How many model calls answered the user's booking request (not the tool's result). */
function bookingRequests(flight: string): number {
  return model.requests.filter((messages) => {
    const last = messages.at(-1);
    return last?.role === 'user' && JSON.stringify(last.content).includes(`book flight ${flight}`);
  }).length;
}

function user(text: string): UIMessage {
  return { id: `u_${Math.random().toString(36).slice(2)}`, role: 'user', parts: [{ type: 'text', text }] };
}

describe('durable chat turns', () => {
  let opened: OpenedStore;
  beforeAll(async () => {
    opened = await openTestStore('memory');
  });
  afterAll(() => opened.cleanup());

  it('runs a turn as a durable run: the booking is an action whose key the ledger keeps', async () => {
    const { store } = opened;
    const scope = freshScope();
    const ledger = join(dir, 'in-process.jsonl');
    const chats = bookingChat({ store, scope, modelBaseURL: model.baseURL, ledger });
    const chatId = await chats.createChat();
    const turn = await chats.startTurn(chatId, user('book flight AB100'));
    const seen = await clientMessage(turn.answer());
    await turn.done;

    const expected = 'The tool said {"flight":"AB100","pnr":"PNR1"}.';
    expect(textOf(seen)).toBe(expected);
    expect(bookingPart(seen)).toMatchObject({ state: 'output-available', output: { flight: 'AB100' } });
    const [line, ...more] = ledgerOf(ledger);
    expect(more).toEqual([]);
    const runs = await store.listTasks(scope, { session_id: chatId, type: CHAT_RUN_NAME });
    expect(runs.items.map((task) => task.state)).toEqual(['DONE']);
    const actions = await store.listActions(scope, { task_id: runs.items[0]?.id as string });
    expect(actions.items).toMatchObject([
      { tool: 'book_flight', status: 'SUCCESS', idempotency_key: line?.key, params: { flight: 'AB100' } },
    ]);
    const last = (await chats.loadChat(chatId)).at(-1);
    expect(textOf(last)).toBe(expected);
    expect(bookingPart(last)?.state).toBe('output-available');
  });
});

describe.each(CRASH_STORES)('a durable chat turn killed after its booking, on %s', (name) => {
  let opened: OpenedStore;
  beforeAll(async () => {
    opened = await openTestStore(name);
  });
  afterAll(() => opened.cleanup());

  it('resumes when the client comes back: booked once, and the answer completes', async () => {
    const { store } = opened;
    const scope = freshScope();
    const ledger = join(dir, `${name}.jsonl`);
    const flight = `KL${name.length}${Math.floor(Math.random() * 1000)}`;
    const chats = bookingChat({ store, scope, modelBaseURL: model.baseURL, ledger, leaseMs: 600 });
    const chatId = await chats.createChat();
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        join(import.meta.dirname, 'durable-chat-child.ts'),
        opened.url,
        scope.tenant_id,
        scope.user_id,
        chatId,
        model.baseURL,
        ledger,
        `book flight ${flight}`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      let out = '';
      for await (const chunk of child.stdout) {
        out += String(chunk);
        if (out.includes('booked\n')) break;
      }
      expect(out).toContain('booked');
      child.kill('SIGKILL');
      await exited;
    } finally {
      child.kill('SIGKILL');
    }
    expect(ledgerOf(ledger)).toHaveLength(1);

    // The client comes back (a reload): it follows the dead stream, which the turn's resumed run goes on.
    const stream = await chats.resumeStream(chatId);
    expect(stream).not.toBeNull();
    const seen = await clientMessage(stream as ReadableStream<UIMessageChunk>);
    expect(ledgerOf(ledger)).toHaveLength(1);
    const expected = `The tool said {"flight":"${flight}","pnr":"PNR1"}.`;
    expect(textOf(seen)).toBe(expected);
    expect(bookingPart(seen)?.state).toBe('output-available');
    expect(bookingRequests(flight)).toBe(1);
    const last = (await chats.loadChat(chatId)).at(-1);
    expect(textOf(last)).toBe(expected);
    expect(bookingPart(last)?.state).toBe('output-available');
    // The client's stream ends with the model's text; the run's last commit (its task DONE) follows it.
    let states: string[] = [];
    for (const until = Date.now() + 10_000; Date.now() < until; ) {
      const runs = await store.listTasks(scope, { session_id: chatId, type: CHAT_RUN_NAME });
      states = runs.items.map((task) => task.state);
      if (states[0] !== 'EXECUTING') break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(states).toEqual(['DONE']);
  });
});
