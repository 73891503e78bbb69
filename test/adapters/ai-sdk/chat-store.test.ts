/**
 * `createChatStore` (agentstate/ai-sdk) with a real `ai` 6 `streamText` against a local Chat Completions
 * server (@ai-sdk/openai-compatible), over real stores: memory, a SQLite file, and PostgreSQL and Redis
 * when their test URLs are set. A chat's answers are stored per step with their tool calls and results; an
 * answer cut short is stored in a form the next model call accepts (the server refuses a dangling tool
 * call, as OpenAI does); a stream is replayed from the run event log after a disconnect, from another
 * store instance over the same data, and after its writer was killed.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
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
  type UIMessageChunk,
} from 'ai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  type ChatStore,
  createChatStore,
  INTERRUPTED_TOOL_CALL,
} from '../../../src/adapters/ai-sdk/index.js';
import { openStore } from '../../../src/store/open.js';
import type { Scope, StateStore } from '../../../src/store/types.js';
import { freshScope, type OpenedStore, openTestStore, type StoreName } from '../stores.js';
import { type ChatModelServer, LONG_STORY, startChatModelServer } from './chat-model-server.js';

const STORES: StoreName[] = [
  'memory',
  'sqlite',
  ...(process.env.AGENTSTATE_TEST_POSTGRES_URL ? (['postgres'] as const) : []),
  ...(process.env.AGENTSTATE_TEST_REDIS_URL ? (['redis'] as const) : []),
];

let model: ChatModelServer;
beforeAll(async () => {
  model = await startChatModelServer();
});
afterAll(() => model.close());

const languageModel = () =>
  createOpenAICompatible({ name: 'local', baseURL: model.baseURL }).chatModel('local');

function userMessage(text: string, id = `u_${Math.random().toString(36).slice(2)}`): UIMessage {
  return { id, role: 'user', parts: [{ type: 'text', text }] };
}

function weatherTools(execute?: (city: string, signal?: AbortSignal) => Promise<unknown>): ToolSet {
  return {
    get_weather: tool({
      description: 'The weather in a city.',
      inputSchema: jsonSchema<{ city: string }>({
        type: 'object',
        properties: { city: { type: 'string' } },
        required: ['city'],
      }),
      execute: async ({ city }, { abortSignal }) =>
        execute === undefined ? { city, sky: 'sunny' } : execute(city, abortSignal),
    }),
  };
}

/** The client's view: the answer's message as the SDK builds it from a stream. */
async function clientMessage(stream: ReadableStream<UIMessageChunk>): Promise<UIMessage | undefined> {
  let last: UIMessage | undefined;
  for await (const message of readUIMessageStream({ stream, terminateOnError: false, onError: () => {} }))
    last = message;
  return last;
}

function textOf(message: UIMessage | undefined): string {
  return (message?.parts ?? []).map((part) => (part.type === 'text' ? part.text : '')).join('');
}

/** A whole turn: the chat's history and `text` to the model, the client's stream read to its end. */
async function turnOf(chats: ChatStore, chatId: string, text: string, tools?: ToolSet) {
  const turn = await chats.startTurn(chatId, userMessage(text), tools === undefined ? {} : { tools });
  const result = streamText({
    model: languageModel(),
    messages: await convertToModelMessages(turn.messages),
    ...(tools === undefined ? {} : { tools }),
    stopWhen: stepCountIs(4),
    maxRetries: 0,
  });
  const message = await clientMessage(turn.stream(result.toUIMessageStream()));
  await turn.done;
  return { turn, message };
}

describe.each(STORES)('chat store over %s', (name) => {
  let opened: OpenedStore;
  let store: StateStore;
  let scope: Scope;
  let chats: ChatStore;
  beforeAll(async () => {
    opened = await openTestStore(name);
    store = opened.store;
  });
  afterAll(() => opened.cleanup());
  beforeEach(() => {
    scope = freshScope();
    chats = createChatStore({ store, scope, leaseMs: 1000 });
  });

  it('stores an answer with its tool call and result, one append per step, and loads it validated', async () => {
    const chatId = await chats.createChat();
    expect(await chats.loadChat(chatId)).toEqual([]);
    const tools = weatherTools();
    const { message } = await turnOf(chats, chatId, 'What is the weather in Paris?', tools);
    const loaded = await chats.loadChat(chatId, { tools });
    expect(loaded.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(loaded[1]).toEqual(message);
    const tool = loaded[1]?.parts.find((part) => part.type === 'tool-get_weather');
    expect(tool).toMatchObject({
      state: 'output-available',
      input: { city: 'Paris' },
      output: { city: 'Paris', sky: 'sunny' },
    });
    expect(textOf(loaded[1])).toBe('The tool said {"city":"Paris","sky":"sunny"}.');
    // The user message, then one record per step: the tool call with its result, then the text.
    const records = await store.listMessages(scope, chatId);
    expect(records.map((r) => r.role)).toEqual(['user', 'assistant', 'assistant']);
    expect(await chats.activeStream(chatId)).toBeNull();

    // The next turn takes the stored history as it is.
    const refused = model.refused;
    const next = await turnOf(chats, chatId, 'Thanks!', tools);
    expect(textOf(next.message)).toBe('You said: Thanks!');
    expect(model.refused).toBe(refused);
    expect((await chats.loadChat(chatId, { tools })).map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'user',
      'assistant',
    ]);
  });

  it('continues the last answer with a client-side tool result, stored as one message', async () => {
    const chatId = await chats.createChat();
    const clientTools: ToolSet = {
      get_weather: tool({
        description: 'The weather in a city, asked of the user.',
        inputSchema: jsonSchema<{ city: string }>({
          type: 'object',
          properties: { city: { type: 'string' } },
        }),
      }),
    };
    const first = await turnOf(chats, chatId, 'weather in Lima', clientTools);
    const asked = first.message as UIMessage;
    expect(asked.parts.find((p) => p.type === 'tool-get_weather')).toMatchObject({
      state: 'input-available',
    });
    // The client answers the call (addToolOutput) and sends the message back.
    const answered: UIMessage = {
      ...asked,
      parts: asked.parts.map((p) =>
        p.type === 'tool-get_weather' ? { ...p, state: 'output-available', output: { sky: 'grey' } } : p,
      ) as UIMessage['parts'],
    };
    const turn = await chats.startTurn(chatId, answered, { tools: clientTools });
    expect(turn.messages.map((m) => m.id)).toEqual((await chats.loadChat(chatId)).map((m) => m.id));
    const result = streamText({
      model: languageModel(),
      messages: await convertToModelMessages(turn.messages),
      tools: clientTools,
      maxRetries: 0,
    });
    const message = await clientMessage(turn.stream(result.toUIMessageStream()));
    await turn.done;
    const loaded = await chats.loadChat(chatId, { tools: clientTools });
    expect(loaded.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(loaded[1]?.id).toBe(asked.id);
    expect(loaded[1]?.parts.find((p) => p.type === 'tool-get_weather')).toMatchObject({
      state: 'output-available',
      output: { sky: 'grey' },
    });
    expect(textOf(loaded[1])).toBe('The tool said {"sky":"grey"}.');
    expect(message?.id).toBe(asked.id);
  });

  it('closes a tool call cut off before its result, so the next model call accepts the chat', async () => {
    const chatId = await chats.createChat();
    const abort = new AbortController();
    const tools = weatherTools(
      (_city, signal) =>
        new Promise((_resolve, reject) => {
          signal?.addEventListener('abort', () => reject(signal.reason));
          abort.abort(); // the tool is running: the answer is cut off now
        }),
    );
    const turn = await chats.startTurn(chatId, userMessage('The weather in Oslo, please'), { tools });
    const result = streamText({
      model: languageModel(),
      messages: await convertToModelMessages(turn.messages),
      tools,
      abortSignal: abort.signal,
      maxRetries: 0,
    });
    const raw = await clientMessage(turn.stream(result.toUIMessageStream()));
    await turn.done;
    expect(raw?.parts.find((p) => p.type === 'tool-get_weather')).toMatchObject({ state: 'input-available' });

    const loaded = await chats.loadChat(chatId, { tools });
    expect(loaded[1]?.parts.find((p) => p.type === 'tool-get_weather')).toMatchObject({
      state: 'output-error',
      input: { city: 'Oslo' },
      errorText: INTERRUPTED_TOOL_CALL,
    });
    const events = await store.listRunEvents(scope, chatId, turn.runId, { limit: 1000 });
    expect(events.at(-1)?.type).toBe('run.cancelled');

    // The history as the client had it has a dangling call: it is refused...
    const refused = model.refused;
    const asClientHadIt = [...turn.messages, raw as UIMessage, userMessage('And now?')];
    const errors: unknown[] = [];
    await streamText({
      model: languageModel(),
      messages: await convertToModelMessages(asClientHadIt),
      tools,
      maxRetries: 0,
      onError: ({ error }) => {
        errors.push(error);
      },
    }).consumeStream();
    // (the SDK itself refuses it before the request: "Tool result is missing for tool call")
    expect(String(errors[0])).toMatch(/Tool result is missing|did not have response messages/);
    // ...the stored one is accepted.
    const next = await turnOf(chats, chatId, 'And now?', tools);
    expect(textOf(next.message)).toBe('You said: And now?');
    expect(errors).toHaveLength(1);
    expect(model.refused).toBe(refused);
  });

  it('keeps the text of an answer whose model connection dropped mid-stream', async () => {
    const chatId = await chats.createChat();
    model.cut(3);
    const { turn } = await turnOf(chats, chatId, 'hello there, model');
    const loaded = await chats.loadChat(chatId);
    expect(textOf(loaded[1])).toBe('You said: hello there, model'.slice(0, 21));
    expect(loaded[1]?.parts.every((p) => p.type !== 'text' || p.state === 'done')).toBe(true);
    const events = await store.listRunEvents(scope, chatId, turn.runId, { limit: 1000 });
    expect(events.at(-1)?.type).toBe('run.failed');
    const next = await turnOf(chats, chatId, 'again');
    expect(textOf(next.message)).toBe('You said: again');
  });

  it('replays a stream from the run event log after the client disconnects, then follows it to its end', async () => {
    const chatId = await chats.createChat();
    const hold = model.hold(40);
    const turn = await chats.startTurn(chatId, userMessage('Tell me a long story'));
    const result = streamText({
      model: languageModel(),
      messages: await convertToModelMessages(turn.messages),
      maxRetries: 0,
    });
    const first = turn.stream(result.toUIMessageStream()).getReader();
    await first.read();
    await first.cancel(); // the client leaves (a reload)
    await hold.reached;
    expect(await chats.activeStream(chatId)).toBe(turn.runId);

    const resumed = await chats.resumeStream(chatId);
    expect(resumed).not.toBeNull();
    hold.release();
    const message = await clientMessage(resumed as ReadableStream<UIMessageChunk>);
    expect(textOf(message)).toBe(LONG_STORY);
    await turn.done;
    const loaded = await chats.loadChat(chatId);
    expect(loaded[1]).toEqual(message);
    expect(await chats.resumeStream(chatId)).toBeNull();

    // Batched: far fewer events than the model's pieces of text.
    const events = await store.listRunEvents(scope, chatId, turn.runId, { limit: 1000 });
    expect(events.length).toBeLessThan(Math.ceil(LONG_STORY.length / 7) / 4);
  });

  it.skipIf(name === 'memory')('resumes from a second store instance over the same data', async () => {
    const other = await openStore(opened.url);
    try {
      const elsewhere = createChatStore({ store: other, scope, leaseMs: 1000 });
      const chatId = await chats.createChat();
      const hold = model.hold(20);
      const turn = await chats.startTurn(chatId, userMessage('One long story, please'));
      const result = streamText({
        model: languageModel(),
        messages: await convertToModelMessages(turn.messages),
        maxRetries: 0,
      });
      await turn.stream(result.toUIMessageStream()).cancel();
      await hold.reached;
      const resumed = await elsewhere.resumeStream(chatId);
      hold.release();
      const message = await clientMessage(resumed as ReadableStream<UIMessageChunk>);
      expect(textOf(message)).toBe(LONG_STORY);
      await turn.done;
      expect((await elsewhere.loadChat(chatId))[1]).toEqual(message);
    } finally {
      await other.close();
    }
  });

  it.skipIf(name === 'memory')('recovers a stream whose writer was killed mid-answer', async () => {
    const chatId = await chats.createChat();
    const hold = model.hold(40);
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        join(import.meta.dirname, 'chat-crash-child.ts'),
        opened.url,
        scope.tenant_id,
        scope.user_id,
        chatId,
        model.baseURL,
        'Tell me a long story',
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const exited = new Promise((resolve) => child.on('exit', resolve));
    try {
      await hold.reached;
      const runId = (await chats.activeStream(chatId)) as string;
      // Wait until the child's first batches are stored, then kill it.
      for (;;) {
        const events = await store.listRunEvents(scope, chatId, runId, { limit: 1000 });
        const stored = events.map((e) => (typeof e.data.text === 'string' ? e.data.text : '')).join('');
        if (stored.length >= 200) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      child.kill('SIGKILL');
      await exited;
    } finally {
      hold.release();
      child.kill('SIGKILL');
    }
    // A client that comes back follows the dead stream: it ends once the writer's lease ran out.
    const resumed = await createChatStore({ store, scope, leaseMs: 600 }).resumeStream(chatId);
    const message = await clientMessage(resumed as ReadableStream<UIMessageChunk>);
    expect(LONG_STORY.startsWith(textOf(message))).toBe(true);
    expect(textOf(message).length).toBeGreaterThanOrEqual(200);
    const loaded = await chats.loadChat(chatId);
    expect(loaded.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(textOf(loaded[1])).toBe(textOf(message));
    expect(await chats.activeStream(chatId)).toBeNull();
    const next = await turnOf(chats, chatId, 'go on');
    expect(textOf(next.message)).toBe('You said: go on');
  });
});
