/**
 * Ownership of values (store contract): what a caller passes in and what it gets back are its own. Changing
 * an input after the call, or a returned record, never changes what is stored, and the store never changes
 * the caller's input.
 */
import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../core/json.js';
import type { Ctx } from './context.js';
import { session, task, uniqueKey } from './fixtures.js';

function deepInput(): JsonObject {
  return { list: [1, { inner: 'a' }], nested: { flag: true } };
}

/** Changes every level of a value built by deepInput (or a copy of one). */
function scribble(value: unknown): void {
  const v = value as { list: unknown[]; nested: { flag: boolean }; added?: number };
  v.list.push('extra');
  (v.list[1] as { inner: string }).inner = 'changed';
  v.nested.flag = false;
  v.added = 1;
}

export function ownershipTests(t: Ctx): void {
  describe('ownership of values', () => {
    it('sessions: neither the input nor a returned session can change what is stored', async () => {
      const context = deepInput();
      const created = await t.store.createSession(t.scope, { context });
      expect(context).toEqual(deepInput());
      scribble(context);
      scribble(created.context);
      const read = await t.store.getSession(t.scope, created.id);
      expect(read?.context).toEqual(deepInput());
      scribble(read?.context);
      const listed = await t.store.listSessions(t.scope);
      expect(listed.items[0]?.context).toEqual(deepInput());
      const patch = deepInput();
      const updated = await t.store.updateSession(t.scope, created.id, 1, { context: patch });
      scribble(patch);
      scribble(updated.context);
      expect((await t.store.getSession(t.scope, created.id))?.context).toEqual(deepInput());
    });

    it('messages: metadata and tool calls are copied in and out', async () => {
      const s = await session(t.store, t.scope);
      const metadata = deepInput();
      const args = deepInput();
      const added = await t.store.appendMessages(t.scope, s.id, [
        { role: 'assistant', content: '', metadata, tool_calls: [{ id: 'c', name: 'f', arguments: args }] },
      ]);
      scribble(metadata);
      scribble(args);
      scribble(added[0]?.metadata);
      scribble(added[0]?.tool_calls?.[0]?.arguments);
      const read = await t.store.listMessages(t.scope, s.id);
      expect(read[0]?.metadata).toEqual(deepInput());
      expect(read[0]?.tool_calls?.[0]?.arguments).toEqual(deepInput());
      scribble(read[0]?.metadata);
      expect((await t.store.lastMessages(t.scope, s.id, 1))[0]?.metadata).toEqual(deepInput());
    });

    it('tasks: slots and data are copied in and out', async () => {
      const slots = deepInput();
      const created = await t.store.createTask(t.scope, { type: 'x', slots, data: slots });
      scribble(slots);
      scribble(created.slots);
      scribble(created.data);
      const read = await t.store.getTask(t.scope, created.id);
      expect(read?.slots).toEqual(deepInput());
      expect(read?.data).toEqual(deepInput());
      scribble(read?.slots);
      const listed = await t.store.listTasks(t.scope);
      expect(listed.items[0]?.slots).toEqual(deepInput());
      const events = await t.store.listTaskEvents(t.scope, created.id);
      (events[0] as { to_state: string }).to_state = 'DONE';
      expect((await t.store.listTaskEvents(t.scope, created.id))[0]?.to_state).toBe('INIT');
    });

    it('actions: params and results are copied in and out', async () => {
      const k = await task(t.store, t.scope);
      const params = deepInput();
      const key = uniqueKey();
      const { action } = await t.store.beginAction(t.scope, {
        task_id: k.id,
        type: 'x',
        params,
        idempotency_key: key,
      });
      scribble(params);
      scribble(action.params);
      expect((await t.store.getAction(t.scope, action.id))?.params).toEqual(deepInput());
      const result = deepInput();
      const done = await t.store.completeAction(t.scope, action.id, { status: 'SUCCESS', result });
      scribble(result);
      scribble(done.result);
      const read = await t.store.getActionByKey(t.scope, key);
      expect(read?.result).toEqual(deepInput());
      expect(read?.params).toEqual(deepInput());
    });

    it('checkpoints: channels are copied in and out', async () => {
      const run = `run-${uniqueKey()}`;
      const channels = { state: deepInput(), messages: [deepInput()] };
      const cp = await t.store.putCheckpoint(t.scope, { run_id: run, step: 0, channels });
      scribble(channels.state);
      scribble(channels.messages[0]);
      scribble(cp.channels.state);
      const read = await t.store.getCheckpoint(t.scope, cp.id);
      expect(read?.channels).toEqual({ state: deepInput(), messages: [deepInput()] });
      scribble(read?.channels.state);
      (read!.channels.messages as unknown[]).push('x');
      const latest = await t.store.latestCheckpoint(t.scope, run);
      expect(latest?.channels).toEqual({ state: deepInput(), messages: [deepInput()] });
      const next = await t.store.putCheckpoint(t.scope, {
        run_id: run,
        step: 1,
        channels: { state: deepInput(), messages: [deepInput(), deepInput()] },
      });
      const history = await t.store.listCheckpoints(t.scope, run);
      scribble(history.items[0]?.channels.state);
      (history.items[1]!.channels.messages as unknown[]).push('y');
      expect((await t.store.getCheckpoint(t.scope, next.id))?.channels.messages).toEqual([
        deepInput(),
        deepInput(),
      ]);
      expect((await t.store.getCheckpoint(t.scope, cp.id))?.channels.messages).toEqual([deepInput()]);
    });

    it('memory items and stored responses are copied in and out', async () => {
      const value = deepInput();
      const item = await t.store.putMemory(t.scope, { namespace: 'ns', key: 'k', value });
      scribble(value);
      scribble(item.value);
      const read = await t.store.getMemory(t.scope, 'ns', 'k');
      expect(read?.value).toEqual(deepInput());
      scribble(read?.value);
      expect((await t.store.listMemory(t.scope, 'ns')).items[0]?.value).toEqual(deepInput());
      const key = uniqueKey('req');
      await t.store.claimRequestKey(t.scope, key, 'h', 60);
      const body = deepInput();
      await t.store.completeRequestKey(t.scope, key, { status: 200, body });
      scribble(body);
      const claim = await t.store.claimRequestKey(t.scope, key, 'h', 60);
      if (claim.state !== 'done') throw new Error(`expected done, got ${claim.state}`);
      scribble(claim.response.body);
      const again = await t.store.claimRequestKey(t.scope, key, 'h', 60);
      expect(again).toEqual({ state: 'done', response: { status: 200, body: deepInput() } });
    });

    it('a turn result is the caller own', async () => {
      const s = await session(t.store, t.scope);
      const slots = deepInput();
      const result = await t.store.commitTurn(t.scope, {
        session: { id: s.id, expected_version: 1, patch: { context: deepInput() } },
        create_tasks: [{ type: 'x', slots }],
        messages: { session_id: s.id, items: [{ role: 'user', content: 'x', metadata: deepInput() }] },
      });
      scribble(slots);
      scribble(result.session?.context);
      scribble(result.tasks[0]?.slots);
      scribble(result.messages[0]?.metadata);
      expect((await t.store.getSession(t.scope, s.id))?.context).toEqual(deepInput());
      expect((await t.store.getTask(t.scope, result.tasks[0]!.id))?.slots).toEqual(deepInput());
      expect((await t.store.listMessages(t.scope, s.id))[0]?.metadata).toEqual(deepInput());
    });
  });
}
