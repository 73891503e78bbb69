/**
 * Data rules (SPEC 2). Rules: every value written passes the plain-JSON guard on every write path. A Date,
 * Map, Set, BigInt, NaN, Infinity, a cycle, undefined (in an array or as a property), a function or a class
 * instance is refused with `invalid_request` whose message names the JSON path (for example
 * `task.slots.bad[1]`), and nothing of the call is stored.
 */
import { describe, expect, it } from 'vitest';
import type { StateStore } from '../../store/types.js';
import type { Ctx } from './context.js';
import { expectInvalid } from './expect.js';
import { action, session, task, uniqueKey } from './fixtures.js';

class Booking {
  constructor(readonly date = '2026-03-01') {}
}

function cycle(): unknown {
  const node: Record<string, unknown> = { a: 1 };
  node.self = node;
  return node;
}

/** Values that are not plain JSON, each planted as `{ ok: 1, bad: value }`. */
const BAD: readonly [string, () => unknown][] = [
  ['Date', () => new Date('2026-03-01T10:00:00Z')],
  ['Map', () => new Map([['a', 1]])],
  ['Set', () => new Set([1])],
  ['BigInt', () => 10n],
  ['NaN', () => Number.NaN],
  ['Infinity', () => Number.POSITIVE_INFINITY],
  ['a cycle', cycle],
  ['undefined in an array', () => [1, undefined]],
  ['undefined as a property', () => ({ x: undefined })],
  ['a function', () => () => 1],
  ['a class instance', () => new Booking()],
];

interface Fixture {
  sessionId: string;
  taskId: string;
  actionId: string;
  run: string;
  requestKey: string;
}

type Write = (s: StateStore, t: Ctx, f: Fixture, bad: never) => Promise<unknown>;

/** Each write path, and the JSON path its error must name (before `.bad`). */
const PATHS: readonly [string, string, Write][] = [
  ['createSession context', 'context', (s, t, _f, bad) => s.createSession(t.scope, { context: bad })],
  [
    'updateSession context',
    'context',
    (s, t, f, bad) => s.updateSession(t.scope, f.sessionId, 1, { context: bad }),
  ],
  [
    'appendMessages metadata',
    'metadata',
    (s, t, f, bad) => s.appendMessages(t.scope, f.sessionId, [{ role: 'user', content: 'x', metadata: bad }]),
  ],
  [
    'appendMessages tool call arguments',
    'arguments',
    (s, t, f, bad) =>
      s.appendMessages(t.scope, f.sessionId, [
        { role: 'assistant', content: '', tool_calls: [{ id: 'c1', name: 'f', arguments: bad }] },
      ]),
  ],
  ['createTask slots', 'slots', (s, t, _f, bad) => s.createTask(t.scope, { type: 'x', slots: bad })],
  ['createTask data', 'data', (s, t, _f, bad) => s.createTask(t.scope, { type: 'x', data: bad })],
  ['updateTask slots', 'slots', (s, t, f, bad) => s.updateTask(t.scope, f.taskId, 1, { slots: bad })],
  [
    'updateTask data',
    'data',
    (s, t, f, bad) => s.updateTask(t.scope, f.taskId, 1, { data: bad, state: 'COLLECTING' }),
  ],
  [
    'beginAction params',
    'params',
    (s, t, f, bad) =>
      s.beginAction(t.scope, { task_id: f.taskId, type: 'x', params: bad, idempotency_key: uniqueKey() }),
  ],
  [
    'completeAction result',
    'result',
    (s, t, f, bad) => s.completeAction(t.scope, f.actionId, { status: 'SUCCESS', result: bad }),
  ],
  [
    'completeAction error details',
    'details',
    (s, t, f, bad) =>
      s.completeAction(t.scope, f.actionId, {
        status: 'FAILED',
        error: { code: 'e', message: 'm', details: bad },
      }),
  ],
  [
    'resolveAction result',
    'result',
    (s, t, f, bad) => s.resolveAction(t.scope, f.actionId, { status: 'SUCCESS', result: bad, note: 'ops' }),
  ],
  [
    'putCheckpoint channels',
    'channels',
    (s, t, f, bad) => s.putCheckpoint(t.scope, { run_id: f.run, step: 1, channels: bad }),
  ],
  [
    'putCheckpoint metadata',
    'metadata',
    (s, t, f, bad) => s.putCheckpoint(t.scope, { run_id: f.run, step: 1, channels: {}, metadata: bad }),
  ],
  [
    'putMemory value',
    'value',
    (s, t, _f, bad) => s.putMemory(t.scope, { namespace: 'ns', key: 'k', value: bad }),
  ],
  [
    'commitTurn session context',
    'context',
    (s, t, f, bad) =>
      s.commitTurn(t.scope, { session: { id: f.sessionId, expected_version: 1, patch: { context: bad } } }),
  ],
  [
    'commitTurn created task slots',
    'slots',
    (s, t, _f, bad) => s.commitTurn(t.scope, { create_tasks: [{ type: 'x', slots: bad }] }),
  ],
  [
    'commitTurn task update data',
    'data',
    (s, t, f, bad) =>
      s.commitTurn(t.scope, { update_tasks: [{ id: f.taskId, expected_version: 1, patch: { data: bad } }] }),
  ],
  [
    'commitTurn action params',
    'params',
    (s, t, f, bad) =>
      s.commitTurn(t.scope, {
        create_tasks: [{ type: 'ok' }],
        begin_actions: [{ task_id: f.taskId, type: 'x', params: bad, idempotency_key: uniqueKey() }],
      }),
  ],
  [
    'commitTurn completed action result',
    'result',
    (s, t, f, bad) =>
      s.commitTurn(t.scope, { complete_actions: [{ id: f.actionId, status: 'SUCCESS', result: bad }] }),
  ],
  [
    'commitTurn message metadata',
    'metadata',
    (s, t, f, bad) =>
      s.commitTurn(t.scope, {
        create_tasks: [{ type: 'ok' }],
        messages: { session_id: f.sessionId, items: [{ role: 'user', content: 'x', metadata: bad }] },
      }),
  ],
  [
    'commitTurn checkpoint channels',
    'channels',
    (s, t, f, bad) =>
      s.commitTurn(t.scope, {
        create_tasks: [{ type: 'ok' }],
        checkpoint: { run_id: f.run, step: 1, channels: bad },
      }),
  ],
  [
    'completeRequestKey body',
    'body',
    (s, t, f, bad) => s.completeRequestKey(t.scope, f.requestKey, { status: 200, body: bad }),
  ],
];

async function everything(s: StateStore, t: Ctx, f: Fixture) {
  return {
    sessions: (await s.listSessions(t.scope, { limit: 500 })).items,
    messages: await s.listMessages(t.scope, f.sessionId),
    tasks: (await s.listTasks(t.scope, { limit: 500 })).items,
    events: await s.listTaskEvents(t.scope, f.taskId),
    actions: (await s.listActions(t.scope, { limit: 500 })).items,
    checkpoints: (await s.listCheckpoints(t.scope, f.run)).items,
    memory: (await s.listMemory(t.scope, 'ns')).items,
    requestKey: await s.claimRequestKey(t.scope, f.requestKey, 'hash-1', 3600),
  };
}

export function dataRuleTests(t: Ctx): void {
  async function fixture(): Promise<Fixture> {
    const s = await session(t.store, t.scope);
    const k = await task(t.store, t.scope, s.id);
    const a = await action(t.store, t.scope, k.id);
    const requestKey = uniqueKey('req');
    expect((await t.store.claimRequestKey(t.scope, requestKey, 'hash-1', 3600)).state).toBe('new');
    return { sessionId: s.id, taskId: k.id, actionId: a.id, run: `run-${uniqueKey()}`, requestKey };
  }

  describe('data rules', () => {
    for (const [label, field, write] of PATHS) {
      it(`${label}: refuses every non-JSON value, naming its path, and stores nothing`, async () => {
        const f = await fixture();
        const before = await everything(t.store, t, f);
        for (const [kind, make] of BAD) {
          const planted = { ok: 1, bad: make() };
          const error = await expectInvalid(t.store, write(t.store, t, f, planted as never), `${field}.bad`);
          expect(error.message, `${label} with ${kind}`).toContain(`${field}.bad`);
        }
        expect(await everything(t.store, t, f)).toEqual(before);
      });
    }

    for (const [kind, make] of BAD) {
      it(`refuses ${kind} at the top of a value and deep inside one`, async () => {
        const f = await fixture();
        const deep = { a: [{ b: { c: [0, { bad: make() }] } }] };
        await expectInvalid(
          t.store,
          t.store.createTask(t.scope, { type: 'x', slots: deep as never }),
          'slots.a[0].b.c[1].bad',
        );
        await expectInvalid(
          t.store,
          t.store.putMemory(t.scope, { namespace: 'ns', key: 'top', value: make() as never }),
        );
        expect(await t.store.getMemory(t.scope, 'ns', 'top')).toBeNull();
        expect((await t.store.listTasks(t.scope)).items.map((k) => k.id)).toEqual([f.taskId]);
      });
    }

    it('accepts and returns plain JSON exactly, with odd keys and strings', async () => {
      const value = {
        'key with spaces': 1,
        'dotted.key': { '[0]': 'brackets' },
        '': 'empty key',
        unicode: 'Zürich → 東京 🚀',
        quotes: 'he said "hi"\n\ttab \\ backslash',
        numbers: [0, -1, 1.5, 1e21, -2.5e-8, Number.MAX_SAFE_INTEGER],
        nested: { deep: { deeper: { deepest: [[[[]]]] } } },
        flags: [true, false, null],
        nul: 'a\u0000b',
        'key\u0000nul': 'NUL in a key',
      };
      const created = await t.store.createTask(t.scope, { type: 'x', slots: value, data: value });
      const read = await t.store.getTask(t.scope, created.id);
      expect(read?.slots).toEqual(value);
      expect(read?.data).toEqual(value);
      await t.store.putMemory(t.scope, { namespace: 'ns', key: 'odd', value });
      expect((await t.store.getMemory(t.scope, 'ns', 'odd'))?.value).toEqual(value);
    });

    it('object key order is not part of a value', async () => {
      const created = await t.store.createTask(t.scope, {
        type: 'x',
        slots: { b: 1, a: 2, c: { z: 1, y: 2 } },
      });
      expect((await t.store.getTask(t.scope, created.id))?.slots).toEqual({ a: 2, b: 1, c: { y: 2, z: 1 } });
    });
  });
}
