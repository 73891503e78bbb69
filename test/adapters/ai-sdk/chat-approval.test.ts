/**
 * Tool calls that need approval (AI SDK 6 `needsApproval`) in `createChatStore`, with a real `streamText`
 * against the local Chat Completions server: a call that asks for approval is a PENDING action of the
 * chat's session (`ai_sdk_approval`) and the session waits for its user; the decision, from the chat's
 * client or from `PATCH /v1/actions/{id}` on a real agentstate server, is recorded on the action, and the
 * chat carries it out when it continues (the SDK runs the approved call, tells the model of a denied one).
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
  type UIMessageChunk,
} from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  APPROVAL_ACTION_TYPE,
  type ChatStore,
  type ChatTurn,
  createChatStore,
  UNANSWERED_APPROVAL,
} from '../../../src/adapters/ai-sdk/index.js';
import type { Action } from '../../../src/core/model.js';
import type { Scope, StateStore } from '../../../src/store/types.js';
import { call, startTestServer, type TestServer } from '../../http/harness.js';
import { freshScope, type OpenedStore, openTestStore, type StoreName } from '../stores.js';
import { type ChatModelServer, startChatModelServer } from './chat-model-server.js';

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

/** `get_weather`, which needs approval; `calls` counts its runs. */
function approvalTools() {
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

function userMessage(text: string): UIMessage {
  return { id: `u_${Math.random().toString(36).slice(2)}`, role: 'user', parts: [{ type: 'text', text }] };
}

/** The client's view of the answer: a continuation goes on with the message it continues. */
async function clientMessage(
  stream: ReadableStream<UIMessageChunk>,
  continues: UIMessage | undefined,
): Promise<UIMessage | undefined> {
  let last: UIMessage | undefined;
  const base = continues?.role === 'assistant' ? { message: structuredClone(continues) } : {};
  for await (const message of readUIMessageStream({
    stream,
    ...base,
    terminateOnError: false,
    onError: () => {},
  }))
    last = message;
  return last;
}

/** Streams the turn's answer with `tools`, as a route would; the client's view of the answer. */
async function answer(turn: ChatTurn, tools: ToolSet): Promise<UIMessage | undefined> {
  const result = streamText({
    model: languageModel(),
    tools,
    stopWhen: stepCountIs(4),
    messages: await convertToModelMessages(turn.messages, { tools }),
  });
  const seen = await clientMessage(turn.stream(result.toUIMessageStream()), turn.messages.at(-1));
  await turn.done;
  return seen;
}

type ToolPartView = {
  type: string;
  state: string;
  approval?: { id: string; approved?: boolean; reason?: string };
};

function toolPart(message: UIMessage | undefined): ToolPartView {
  const part = message?.parts.find((p) => p.type === 'tool-get_weather') as ToolPartView | undefined;
  if (part === undefined) throw new Error(`no get_weather part in ${JSON.stringify(message)}`);
  return part;
}

function textOf(message: UIMessage | undefined): string {
  return (message?.parts ?? []).map((part) => (part.type === 'text' ? part.text : '')).join('');
}

/** A chat whose last answer asks for approval of get_weather for Paris. */
async function askForApproval(store: StateStore, scope: Scope, tools: ToolSet) {
  const chats = createChatStore({ store, scope });
  const chatId = await chats.createChat();
  const asked = await answer(await chats.startTurn(chatId, userMessage('weather in Paris')), tools);
  return { chats, chatId, asked };
}

async function approvalAction(chats: ChatStore, store: StateStore, scope: Scope, chatId: string) {
  const [approval] = await chats.pendingApprovals(chatId);
  if (approval === undefined) throw new Error('no pending approval');
  const action = await store.getAction(scope, approval.actionId);
  if (action === null) throw new Error('the approval has no action');
  return { approval, action };
}

describe.each(STORES)('chat approvals on %s', (name) => {
  let opened: OpenedStore;
  beforeAll(async () => {
    opened = await openTestStore(name);
  });
  afterAll(() => opened.cleanup());

  it('keeps a call that needs approval as a PENDING action, and carries out the chat client’s approval', async () => {
    const { store } = opened;
    const scope = freshScope();
    const { tools, calls } = approvalTools();
    const { chats, chatId, asked } = await askForApproval(store, scope, tools);
    expect(toolPart(asked).state).toBe('approval-requested');
    expect(calls).toEqual([]);

    const { approval, action } = await approvalAction(chats, store, scope, chatId);
    expect(approval).toMatchObject({ toolName: 'get_weather', input: { city: 'Paris' }, decision: null });
    expect(action).toMatchObject({
      status: 'PENDING',
      type: APPROVAL_ACTION_TYPE,
      tool: 'get_weather',
      params: { city: 'Paris' },
      session_id: chatId,
      idempotency_key: `ai-sdk-approval:${chatId}:${approval.toolCallId}`,
    });
    const task = await store.getTask(scope, action.task_id);
    expect(task).toMatchObject({ state: 'EXECUTING', status_line: 'waiting for approval: get_weather' });
    expect((await store.getSession(scope, chatId))?.status).toBe('waiting_for_user');
    expect(toolPart((await chats.loadChat(chatId, { tools })).at(-1)).state).toBe('approval-requested');

    // The client answers (addToolApprovalResponse) and sends the last message back: a continuation.
    const stored = (await chats.loadChat(chatId, { tools })).at(-1) as UIMessage;
    const approved = {
      ...stored,
      parts: stored.parts.map((p) =>
        p.type === 'tool-get_weather'
          ? { ...p, state: 'approval-responded', approval: { id: approval.approvalId, approved: true } }
          : p,
      ),
    } as UIMessage;
    const done = await answer(await chats.startTurn(chatId, approved, { tools }), tools);
    expect(calls).toEqual(['Paris']);
    expect(textOf(done)).toBe('The tool said {"city":"Paris","sky":"sunny"}.');

    const after = await store.getAction(scope, action.id);
    expect(after).toMatchObject({ status: 'SUCCESS', result: { approved: true } });
    expect(after?.note).toContain('approved in the chat');
    expect((await store.getTask(scope, action.task_id))?.state).toBe('DONE');
    expect((await store.getSession(scope, chatId))?.status).toBe('active');
    const last = (await chats.loadChat(chatId, { tools })).at(-1);
    expect(toolPart(last).state).toBe('output-available');
    expect(textOf(last)).toBe(textOf(done));
    expect(await chats.pendingApprovals(chatId)).toEqual([]);
  });
});

describe('chat approvals decided outside the chat', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  it('a denial over PATCH /v1/actions/{id} reaches the model when the chat continues; the tool never runs', async () => {
    const { store } = server;
    const scope = { tenant_id: server.tenantA, user_id: server.alice };
    const { tools, calls } = approvalTools();
    const { chats, chatId } = await askForApproval(store, scope, tools);
    const { approval, action } = await approvalAction(chats, store, scope, chatId);
    await expect(chats.continueTurn(chatId, { tools })).rejects.toMatchObject({ code: 'conflict' });

    const denied = await call<Action>(server.url, 'PATCH', `/v1/actions/${action.id}`, {
      token: server.tokens.alice,
      body: { status: 'FAILED', error: { code: 'denied', message: 'Not this city.' }, note: 'ops desk' },
    });
    expect(denied.status, denied.text).toBe(200);
    expect(denied.body.status).toBe('FAILED');
    // The chat shows the decision at once; it waits for the chat to continue.
    expect(toolPart((await chats.loadChat(chatId, { tools })).at(-1)).approval).toMatchObject({
      approved: false,
      reason: 'Not this city.',
    });
    expect(await chats.pendingApprovals(chatId)).toMatchObject([
      { approvalId: approval.approvalId, decision: { approved: false, reason: 'Not this city.' } },
    ]);

    const refused = model.refused;
    const done = await answer(await chats.continueTurn(chatId, { tools }), tools);
    expect(calls).toEqual([]);
    expect(model.refused).toBe(refused);
    expect(textOf(done)).toBe('The tool said Not this city..');
    expect(toolPart(done).state).toBe('output-denied');
    expect((await store.getTask(scope, action.task_id))?.state).toBe('CANCELLED');
    expect((await store.getSession(scope, chatId))?.status).toBe('active');
  });

  it('resolveApproval records the first decision; a new message denies an approval left unanswered', async () => {
    const { store } = server;
    const scope = { tenant_id: server.tenantA, user_id: server.alice };
    const { tools, calls } = approvalTools();
    const first = await askForApproval(store, scope, tools);
    const [asked] = await first.chats.pendingApprovals(first.chatId);
    const approvalId = asked?.approvalId as string;
    const resolved = await first.chats.resolveApproval(first.chatId, { approvalId, approved: true });
    expect(resolved.decision).toEqual({ approved: true });
    await first.chats.resolveApproval(first.chatId, { approvalId, approved: true });
    await expect(
      first.chats.resolveApproval(first.chatId, { approvalId, approved: false }),
    ).rejects.toMatchObject({ code: 'conflict' });
    await expect(
      first.chats.resolveApproval(first.chatId, { approvalId: 'nope', approved: true }),
    ).rejects.toMatchObject({ code: 'not_found' });
    await expect(
      first.chats.resolveApproval(first.chatId, { approvalId, approved: 'yes' } as never),
    ).rejects.toMatchObject({ code: 'invalid_request' });
    const ran = await answer(await first.chats.continueTurn(first.chatId, { tools }), tools);
    expect(calls).toEqual(['Paris']);
    expect(toolPart(ran).state).toBe('output-available');

    // The user writes again instead of answering: the call is denied for them, the model accepts the chat.
    const second = await askForApproval(store, scope, tools);
    const { action } = await approvalAction(second.chats, store, scope, second.chatId);
    const refused = model.refused;
    const next = await answer(await second.chats.startTurn(second.chatId, userMessage('never mind')), tools);
    expect(model.refused).toBe(refused);
    expect(textOf(next)).toBe('You said: never mind');
    expect(await store.getAction(scope, action.id)).toMatchObject({
      status: 'FAILED',
      error: { code: 'denied', message: UNANSWERED_APPROVAL },
    });
    const history = await second.chats.loadChat(second.chatId, { tools });
    expect(toolPart(history.at(-3)).state).toBe('output-denied');
    expect((await store.getSession(scope, second.chatId))?.status).toBe('active');
    expect(calls).toEqual(['Paris']);
  });
});
