/**
 * Actions of durable runs in one process, on memory:, a SQLite file and PostgreSQL: recorded PENDING before
 * they run and SUCCESS after; an unknown outcome recovered through lookup (found, not found, ambiguous:
 * blocked until a person resolves it); a rejected action fails, and fails the run that does not catch it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ActionFailedError,
  type DurableContext,
  type DurableRunOptions,
  durableRun,
} from '../../src/durable/index.js';
import { ToolError } from '../../src/runtime/tool.js';
import type { Scope, StateStore } from '../../src/store/types.js';
import { freshScope, memoryStore, postgresStore, sqliteStore, type TestStore, tempDir } from './stores.js';

const temp = tempDir();
const stores: TestStore[] = [memoryStore(), sqliteStore(temp.dir, 'actions.db'), postgresStore()];
afterAll(async () => {
  for (const s of stores) await s.cleanup();
  temp.cleanup();
});

const fast = { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2, timeoutMs: 5_000 };

describe.each(stores)('durable actions on $name', (testStore) => {
  let store: StateStore;
  beforeAll(async () => {
    store = await testStore.open();
  });
  afterAll(async () => {
    await store.close();
  });

  async function session(): Promise<{ scope: Scope; sessionId: string; base: DurableRunOptions }> {
    const scope = freshScope();
    const { id } = await store.createSession(scope, { agent: null });
    return { scope, sessionId: id, base: { scope, sessionId: id, retry: fast } };
  }

  it('records an action PENDING before it runs, SUCCESS with its result after', async () => {
    const { scope, base } = await session();
    const statusesSeen: string[] = [];
    const out = await durableRun(store, base, async (ctx) =>
      ctx.action(
        'charge',
        { amount: 30 },
        {
          run: async (key) => {
            const action = await store.getActionByKey(scope, key);
            statusesSeen.push(action?.status ?? 'missing');
            return { receipt: `r-${key.length}` };
          },
        },
      ),
    );
    expect(statusesSeen).toEqual(['PENDING']);
    expect(out.status).toBe('done');
    const actions = await store.listActions(scope, { task_id: out.task_id });
    expect(actions.items).toMatchObject([
      {
        tool: 'charge',
        status: 'SUCCESS',
        params: { amount: 30 },
        attempts: 1,
        result: { receipt: expect.any(String) },
      },
    ]);
  });

  it('recovers an unknown outcome through lookup: found is SUCCESS without a second call', async () => {
    const { scope, base } = await session();
    const effects: string[] = [];
    const out = await durableRun(store, base, async (ctx) =>
      ctx.action(
        'charge',
        { amount: 5 },
        {
          run: async (key) => {
            effects.push(key);
            throw new Error('connection reset after the charge');
          },
          lookup: async (key) =>
            effects.includes(key) ? { found: true, result: 'charged' } : { found: false },
        },
      ),
    );
    expect(out).toMatchObject({ status: 'done', value: 'charged' });
    expect(effects).toHaveLength(1);
    const [action] = (await store.listActions(scope, { task_id: out.task_id })).items;
    expect(action).toMatchObject({ status: 'SUCCESS', attempts: 1, idempotency_key: effects[0] });
  });

  it('runs again with the same key when lookup finds the call did not happen', async () => {
    const { scope, base } = await session();
    const keys: string[] = [];
    const effects: string[] = [];
    const out = await durableRun(store, base, async (ctx) =>
      ctx.action(
        'charge',
        { amount: 5 },
        {
          run: async (key, call) => {
            keys.push(key);
            if (call.attempt === 1) throw new Error('timed out before the charge');
            effects.push(key);
            return 'charged';
          },
          lookup: async (key) =>
            effects.includes(key) ? { found: true, result: 'charged' } : { found: false },
        },
      ),
    );
    expect(out).toMatchObject({ status: 'done', value: 'charged' });
    expect(effects).toHaveLength(1);
    expect(new Set(keys).size).toBe(1);
    const [action] = (await store.listActions(scope, { task_id: out.task_id })).items;
    expect(action).toMatchObject({ status: 'SUCCESS', attempts: 2 });
  });

  it('blocks on an ambiguous outcome until a person resolves the action, then goes on with the resolution', async () => {
    const { scope, base } = await session();
    let runs = 0;
    const program = async (ctx: DurableContext) => {
      const receipt = await ctx.action(
        'charge',
        { amount: 9 },
        {
          run: async () => {
            runs++;
            throw new Error('the bank hung up');
          },
          lookup: async () => ({ found: 'ambiguous', reason: 'the bank does not know yet' }),
        },
      );
      return { receipt };
    };
    const first = await durableRun(store, base, program);
    expect(first).toMatchObject({ status: 'blocked', note: expect.stringContaining('ambiguous') });
    if (first.status !== 'blocked') return;
    expect(await store.getAction(scope, first.action_id)).toMatchObject({ status: 'UNKNOWN' });
    const still = await durableRun(store, base, program);
    expect(still).toMatchObject({ status: 'blocked', action_id: first.action_id });
    await store.resolveAction(scope, first.action_id, {
      status: 'SUCCESS',
      result: 'rcpt-9',
      note: 'checked by hand',
    });
    const out = await durableRun(store, base, program);
    expect(out).toMatchObject({ status: 'done', value: { receipt: 'rcpt-9' }, resumed: true });
    expect(runs).toBe(1);
  });

  it('fails an action the downstream rejects; a run that does not catch it fails, and the next call starts anew', async () => {
    const { scope, base } = await session();
    let caught: unknown = null;
    const program = (catchIt: boolean) => async (ctx: DurableContext) => {
      try {
        await ctx.action(
          'charge',
          { amount: 1 },
          {
            run: async () => {
              throw new ToolError('rejected', 'card_declined', 'the card was declined');
            },
          },
        );
      } catch (error) {
        caught = error;
        if (!catchIt) throw error;
      }
      return 'declined';
    };
    const failed = await durableRun(store, base, program(false));
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'card_declined' } });
    expect(caught).toBeInstanceOf(ActionFailedError);
    expect(await store.getTask(scope, failed.task_id)).toMatchObject({ state: 'FAILED' });
    const next = await durableRun(store, base, program(true));
    expect(next).toMatchObject({ status: 'done', value: 'declined' });
    expect(next.task_id).not.toBe(failed.task_id);
  });
});
