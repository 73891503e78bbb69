/**
 * The runtime and the context builder: the openai model (against a local Chat Completions server) gets the
 * built conversation (memory, open tasks, earlier messages); a crash-replayed run sends the same; the
 * rules model gets none; compaction runs after a turn only over its threshold.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { maybeCompact } from '../../src/context/compact.js';
import { readSummaryHead, summaryNamespace } from '../../src/context/summary-store.js';
import { isAgentStateError } from '../../src/core/errors.js';
import { PREFERENCES, userMemory } from '../../src/memory/index.js';
import { createOpenAIModel } from '../../src/models/openai/index.js';
import { createRulesModel } from '../../src/models/rules/index.js';
import { createModelRegistry } from '../../src/models/types.js';
import { resumeRun, runTurn } from '../../src/runtime/turn.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { StateStore } from '../../src/store/types.js';
import { crashingStore, SimulatedCrash } from './faults.js';
import { ledgerTools } from './ledger-tools.js';
import { freshScope, runtimeOptions, tempDir } from './setup.js';

const temp = tempDir();
let server: Server;
let baseURL: string;
const seen: { messages: { role: string; content: string }[]; tool?: string }[] = [];

function completion(body: { tool_choice?: { function: { name: string } } }): unknown {
  const name = body.tool_choice?.function.name;
  const message =
    name === 'extract'
      ? {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: {
                name,
                arguments: JSON.stringify({
                  intent: 'flight_booking',
                  answer: null,
                  cancel: false,
                  another: false,
                  slots: { flight_booking: { origin: 'BJS', destination: 'SHA', date: '2026-12-09' } },
                }),
              },
            },
          ],
        }
      : { role: 'assistant', content: 'Reworded.' };
  return { id: 'c', object: 'chat.completion', choices: [{ index: 0, finish_reason: 'stop', message }] };
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  let raw = '';
  for await (const chunk of req) raw += chunk;
  const body = JSON.parse(raw) as {
    messages: { role: string; content: string }[];
    tool_choice?: { function: { name: string } };
  };
  seen.push({
    messages: body.messages,
    ...(body.tool_choice ? { tool: body.tool_choice.function.name } : {}),
  });
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(completion(body)));
}

beforeAll(async () => {
  server = createServer((req, res) => void handle(req, res));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

afterAll(async () => {
  server.close();
  temp.cleanup();
});

describe('context in the runtime', () => {
  it('gives the openai model the built conversation, and a resumed run replays it', async () => {
    const store = await openSqliteStore(join(temp.dir, 'ctx.db'));
    const scope = freshScope();
    await userMemory(store, scope).put(PREFERENCES, 'flight_booking.cabin_class', 'business');
    const session = await store.createSession(scope, {
      agent: 'flight_booking',
      context: { language: 'en' },
    });
    await store.appendMessages(scope, session.id, [
      { role: 'user', content: 'Hello there' },
      { role: 'assistant', content: 'Hi! Where to?' },
    ]);
    const model = createOpenAIModel({ baseURL, apiKey: 'test-key', model: 'test-model' });
    const options = (s = store) => ({
      ...runtimeOptions(s, scope, session.id, ledgerTools(join(temp.dir, 'l1.jsonl'))),
      models: createModelRegistry([model]),
      model: 'openai',
    });
    seen.length = 0;
    // The turn commits once (the new task goes with the messages): die before it is applied.
    await expect(
      runTurn({ ...options(crashingStore(store, 1, 'before')), input: 'Book a flight to Shanghai' }),
    ).rejects.toBeInstanceOf(SimulatedCrash);
    const extract = seen.find((call) => call.tool === 'extract');
    const system = extract?.messages[0]?.content ?? '';
    expect(system).toContain('business');
    expect(system).toContain('Books flights');
    expect(extract?.messages.map((m) => m.content)).toEqual([
      system,
      'Hello there',
      'Hi! Where to?',
      'Book a flight to Shanghai',
    ]);
    const reply = seen.find((call) => call.tool === undefined);
    expect(reply?.messages.slice(1, 3).map((m) => m.content)).toEqual(['Hello there', 'Hi! Where to?']);

    const before = seen.length;
    const resumed = await resumeRun(options());
    expect(resumed?.resumed).toBe(true);
    expect(resumed?.reply).toBe('Reworded.');
    // Nothing after the 'start' checkpoint was committed, so the resumed run builds the context again and
    // asks again: the conversation is the same one, and the turn's journal records it once.
    const again = seen.slice(before).find((call) => call.tool === 'extract');
    expect(again?.messages).toEqual(extract?.messages);
    const last = await store.latestCheckpoint(scope, resumed?.run_id ?? '');
    const kinds = ((last?.channels.journal ?? []) as { k: string }[]).map((e) => e.k);
    expect(kinds.filter((k) => k === 'context')).toHaveLength(1);
    expect(kinds.indexOf('context')).toBeLessThan(kinds.indexOf('model.extract'));
    // A finished run resumed again asks the model nothing.
    const after = seen.length;
    await resumeRun(options());
    expect(seen.length).toBe(after);
    await store.close();
  });

  it('compacts after a turn only over the threshold; bad context options are refused', async () => {
    const store = await openSqliteStore(join(temp.dir, 'compact.db'));
    const scope = freshScope();
    const session = await store.createSession(scope, {
      agent: 'flight_booking',
      context: { language: 'en' },
    });
    const base = {
      ...runtimeOptions(store, scope, session.id, ledgerTools(join(temp.dir, 'l2.jsonl'))),
      models: createModelRegistry([createRulesModel()]),
    };
    await runTurn({ ...base, input: 'Book a flight from Beijing to Shanghai next Wednesday' });
    await runTurn({ ...base, input: 'business class' });
    // Default threshold (4000 tokens): four short messages are far under it.
    expect(await readSummaryHead(store, scope, session.id)).toBeNull();
    const low = { ...base, context: { compactThresholdTokens: 40 } };
    await runTurn({ ...low, input: 'Ada Lovelace' });
    const head = await readSummaryHead(store, scope, session.id);
    expect(head).not.toBeNull();
    expect(head?.from_seq).toBe(1);
    expect(head?.to_seq).toBeGreaterThanOrEqual(2);
    const bad = runTurn({ ...base, context: { compactThresholdTokens: 0 }, input: 'yes' });
    await expect(bad).rejects.toSatisfy((e: unknown) => isAgentStateError(e, 'invalid_request'));
    await store.close();
  });

  it("a turn's final commit frees its lease; compaction then takes it again, or leaves it to the run that holds it", async () => {
    const inner = await openSqliteStore(join(temp.dir, 'compact-lease.db'));
    const scope = freshScope();
    const session = await inner.createSession(scope, {
      agent: 'flight_booking',
      context: { language: 'en' },
    });
    const lease = `session:${session.id}`;
    const calls: string[] = [];
    let intrude = false;
    const store = new Proxy(inner, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        return async (...args: unknown[]) => {
          calls.push(String(property));
          const out = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          // Another run takes the session's lease the moment the final commit frees it.
          if (property === 'commitTurn' && intrude && (out as { lease_released?: boolean }).lease_released)
            expect(await inner.acquireLease(scope, lease, 'another-run', 60_000)).not.toBeNull();
          return out;
        };
      },
    }) as StateStore;
    const base = {
      ...runtimeOptions(store, scope, session.id, ledgerTools(join(temp.dir, 'l5.jsonl'))),
      models: createModelRegistry([createRulesModel()]),
    };
    await runTurn({ ...base, input: 'Book a flight from Beijing to Shanghai next Wednesday' });
    // Taken with the session's head, freed by the commit: no call of its own, and free for anyone.
    expect(calls).not.toContain('releaseLease');
    expect(calls).not.toContain('acquireLease');
    expect(calls.filter((c) => c === 'getSessionHead')).toHaveLength(1);
    expect(await inner.acquireLease(scope, lease, 'probe', 1000)).not.toBeNull();
    await inner.releaseLease(scope, lease, 'probe');
    // Over the threshold while another run holds the lease: no summary now (that run's check will see it).
    intrude = true;
    const low = { ...base, context: { compactThresholdTokens: 40 } };
    await runTurn({ ...low, input: 'business class' });
    expect(await readSummaryHead(inner, scope, session.id)).toBeNull();
    intrude = false;
    await inner.releaseLease(scope, lease, 'another-run');
    // The next turn's check finds the history it did not add to, reads it, and compacts under the lease.
    calls.length = 0;
    await runTurn({ ...low, input: 'Ada Lovelace' });
    expect((await readSummaryHead(inner, scope, session.id))?.to_seq).toBeGreaterThanOrEqual(2);
    expect(calls.slice(calls.lastIndexOf('commitTurn'))).toEqual(
      expect.arrayContaining(['acquireLease', 'getMemory', 'putMemory', 'releaseLease']),
    );
    expect(await inner.acquireLease(scope, lease, 'probe', 1000)).not.toBeNull();
    await inner.close();
  });

  it('the check after a turn reads nothing when only the turn added to a history last found under the threshold', async () => {
    const inner = await openSqliteStore(join(temp.dir, 'compact-skip.db'));
    const scope = freshScope();
    const session = await inner.createSession(scope, {
      agent: 'flight_booking',
      context: { language: 'en' },
    });
    // the summary-head reads of the check (getMemory in the session's summary namespace)
    let checks = 0;
    const store = new Proxy(inner, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (property !== 'getMemory' || typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (args[1] === summaryNamespace(session.id)) checks++;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    }) as StateStore;
    const base = {
      ...runtimeOptions(store, scope, session.id, ledgerTools(join(temp.dir, 'l3.jsonl'))),
      models: createModelRegistry([createRulesModel()]),
    };
    // A session with no messages before the turn has nothing above a summary: no read for the first check.
    await runTurn({ ...base, input: 'Book a flight from Beijing to Shanghai next Wednesday' });
    expect(checks).toBe(0);
    await runTurn({ ...base, input: 'business class' });
    expect(checks).toBe(0);
    // someone else appends between turns: the next check reads again, then the one after does not
    await inner.appendMessages(scope, session.id, [{ role: 'user', content: 'a note from elsewhere' }]);
    await runTurn({ ...base, input: 'Ada Lovelace' });
    expect(checks).toBe(1);
    await runTurn({ ...base, input: 'yes' });
    expect(checks).toBe(1);
    await store.close();
  });

  it('with the checks it skips, the history after every turn is still under the threshold', async () => {
    const store = await openSqliteStore(join(temp.dir, 'compact-bound.db'));
    const scope = freshScope();
    const session = await store.createSession(scope, {
      agent: 'flight_booking',
      context: { language: 'en' },
    });
    const low = {
      ...runtimeOptions(store, scope, session.id, ledgerTools(join(temp.dir, 'l4.jsonl'))),
      models: createModelRegistry([createRulesModel()]),
      context: { compactThresholdTokens: 120 },
    };
    const inputs = [
      'Book a flight from Beijing to Shanghai next Wednesday',
      'business class',
      'Ada Lovelace',
      'actually make it economy',
      'what is the status?',
      'no, keep it',
    ];
    for (const input of inputs) {
      await runTurn({ ...low, input });
      // a check from scratch (nothing remembered) finds nothing left over the threshold
      expect(await maybeCompact({ store, scope, sessionId: session.id, thresholdTokens: 120 })).toBeNull();
    }
    expect(await readSummaryHead(store, scope, session.id)).not.toBeNull();
    await store.close();
  });
});
