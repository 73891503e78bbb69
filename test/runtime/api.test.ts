/** The runtime's surface: bad input is refused and changes nothing; the bound runtime; the tool contract's types. */
import { join } from 'node:path';
import { afterAll, describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { createBuiltinAgents } from '../../src/agents/index.js';
import { isAgentStateError } from '../../src/core/errors.js';
import type { JsonValue } from '../../src/core/json.js';
import {
  actionKey,
  createAgentRuntime,
  createToolRegistry,
  defineTool,
  listSessionRuns,
  runIdFor,
  runTurn,
  type Tool,
  type ToolContext,
} from '../../src/runtime/index.js';
import { createMemoryStore } from '../../src/store/memory/index.js';
import { ledgerTools } from './ledger-tools.js';
import { freshScope, runtimeOptions, tempDir } from './setup.js';

const temp = tempDir();
afterAll(() => temp.cleanup());

describe('runtime surface', () => {
  it('refuses bad input, an ended session and an unknown agent or model, writing nothing', async () => {
    const store = createMemoryStore();
    const scope = freshScope();
    const tools = ledgerTools(join(temp.dir, 'api.jsonl'));
    const noAgent = await store.createSession(scope, {});
    const opts = runtimeOptions(store, scope, noAgent.id, tools);
    const attempts = [
      () => runTurn({ ...opts, input: '   ' }),
      () => runTurn({ ...opts, input: 'x'.repeat(8_001) }),
      () => runTurn({ ...opts, input: 'hello' }),
      () => runTurn({ ...opts, input: 'hello', agent: 'nobody' }),
      () => runTurn({ ...opts, input: 'hello', agent: 'flight_booking', model: 'gpt-nothing' }),
      () => runTurn({ ...opts, input: 'hello', agent: 'flight_booking', timezone: 'Mars/Olympus' }),
    ];
    const refusals: unknown[] = [];
    for (const attempt of attempts) refusals.push(await attempt().catch((e: unknown) => e));
    expect(refusals.map((e) => (isAgentStateError(e, 'invalid_request') ? e.message : String(e)))).toEqual([
      'input: must be a non-empty string',
      'input: longer than 8000 characters',
      `session ${noAgent.id} names no agent; pass one`,
      'agent "nobody" is not in the agent registry',
      'model "gpt-nothing" is not in the model registry',
      'timezone: "Mars/Olympus" is not an IANA time zone',
    ]);
    expect(await store.listMessages(scope, noAgent.id)).toEqual([]);
    expect(await store.latestCheckpoint(scope, runIdFor(noAgent.id, 0))).toBeNull();
    const ended = await store.createSession(scope, { agent: 'flight_booking' });
    await store.endSession(scope, ended.id);
    const refused = await runTurn({ ...runtimeOptions(store, scope, ended.id, tools), input: 'hi' }).catch(
      (e: unknown) => e,
    );
    expect((refused as Error).message).toContain('has ended; start a new session');
    const missing = await runTurn({
      ...runtimeOptions(store, scope, 'sess_aaaaaaaaaaaaaaaaaaaaaaaaaa', tools),
      input: 'hi',
    }).catch((e: unknown) => e);
    expect(isAgentStateError(missing, 'not_found')).toBe(true);
  });

  it('binds store and registries once: turn and resume', async () => {
    const store = createMemoryStore();
    const scope = freshScope();
    const runtime = createAgentRuntime({
      store,
      agents: createBuiltinAgents(),
      tools: ledgerTools(join(temp.dir, 'bound.jsonl')),
    });
    const session = await store.createSession(scope, {});
    expect(await runtime.resume(scope, session.id)).toBeNull();
    const out = await runtime.turn(scope, session.id, 'hello', 'assistant');
    expect(out.reply).toBe('I can book flights and deploy services. What would you like to do?');
    expect((await runtime.resume(scope, session.id))?.reply).toBe(out.reply);
    const second = await runtime.turn(scope, session.id, 'book a flight to Chengdu');
    expect(second.run_id).not.toBe(out.run_id);
    expect(second.session.agent).toBe('assistant');
    expect(await listSessionRuns(store, scope, session.id)).toEqual([
      { run_id: second.run_id, finished: true },
      { run_id: out.run_id, finished: true },
    ]);
  });

  it('derives idempotency keys from task id, step index and canonical params', () => {
    const key = actionKey('task_x', 2, { b: 1, a: [1, 2] });
    expect(actionKey('task_x', 2, { a: [1, 2], b: 1 })).toBe(key);
    expect(actionKey('task_x', 3, { a: [1, 2], b: 1 })).not.toBe(key);
    expect(actionKey('task_x', 2, { a: [1, 2], b: 2 })).not.toBe(key);
    expect(actionKey('task_x', 2, { a: [1, 2], b: 1 }, 1)).not.toBe(key);
  });

  it('keeps the tool contract small and typed', () => {
    const typed = defineTool({
      name: 'echo',
      description: 'echo',
      params: z.object({ text: z.string() }),
      execute: async (params, ctx) => {
        expectTypeOf(params.text).toEqualTypeOf<string>();
        expectTypeOf(ctx).toEqualTypeOf<ToolContext>();
        return { text: params.text, key: ctx.idempotencyKey };
      },
    });
    expectTypeOf(typed).toEqualTypeOf<Tool>();
    expectTypeOf<ReturnType<Tool['execute']>>().toEqualTypeOf<Promise<JsonValue>>();
    expect(() => createToolRegistry([typed, typed])).toThrow(/two tools are named "echo"/);
    expect(createToolRegistry([typed]).names()).toEqual(['echo']);
  });
});
