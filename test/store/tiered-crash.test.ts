/**
 * A failure between the two writes of a turn (PostgreSQL committed, Redis not yet written): injected by
 * the afterDurableCommit hook throwing, by killing a private redis-server in it, and by the process itself
 * dying there (SIGKILL). Every time: no task state is lost, the session shows no half turn, and the store
 * goes on consistently. Also: a session's turn lock keeps a concurrent session update out of a turn.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { type AgentStateError, isAgentStateError } from '../../src/core/errors.js';
import { OPEN_TASK_STATES } from '../../src/core/model.js';
import { openTieredStore } from '../../src/store/tiered/index.js';
import type { Scope, StateStore } from '../../src/store/types.js';
import { tieredEnv } from './tiered-env.js';
import { freePort, kill, startRedis } from './tiered-redis-server.js';

const env = tieredEnv();
afterAll(() => env.cleanup());
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CRASH_CHILD = fileURLToPath(new URL('./tiered-child/crash-turn.ts', import.meta.url));

let n = 0;
const freshScope = (): Scope => ({ tenant_id: `t_${env.schema}_${++n}`, user_id: 'u1' });

async function failure(work: Promise<unknown>): Promise<AgentStateError> {
  const error = await work.then(
    () => null,
    (e: unknown) => e,
  );
  if (!isAgentStateError(error)) throw new Error(`expected an AgentStateError, got ${String(error)}`);
  return error;
}

/** A session with one message, a task in it (read once, so it has a hot copy) and a pending action. */
async function setup(store: StateStore, scope: Scope) {
  const session = await store.createSession(scope, { ttl_seconds: 600 });
  await store.appendMessages(scope, session.id, [{ role: 'user', content: 'first' }]);
  const task = await store.createTask(scope, { type: 'flight', session_id: session.id });
  expect(await store.getTask(scope, task.id)).toEqual(task);
  const { action } = await store.beginAction(scope, {
    task_id: task.id,
    type: 'tool_call',
    params: { q: 1 },
    idempotency_key: `k-${task.id}`,
  });
  return { session, task, action };
}

describe('tiered store: a failure between the PostgreSQL commit and the Redis write', () => {
  it('an error in between: tasks, actions and checkpoint committed, session untouched, store consistent', async () => {
    let inject = false;
    const store = await openTieredStore(env.url, {
      afterDurableCommit: () => {
        if (inject) throw new Error('injected crash');
      },
    });
    const scope = freshScope();
    const x = await setup(store, scope);
    const batch = {
      session: { id: x.session.id, expected_version: 1, patch: { context: { turn: 2 } } },
      update_tasks: [{ id: x.task.id, expected_version: 1, patch: { state: 'COLLECTING' as const } }],
      complete_actions: [{ id: x.action.id, status: 'SUCCESS' as const, result: { ok: true } }],
      messages: { session_id: x.session.id, items: [{ role: 'assistant' as const, content: 'reply' }] },
      checkpoint: { run_id: `run-${x.task.id}`, task_id: x.task.id, step: 1, channels: { step: 1 } },
    };
    inject = true;
    const error = await failure(store.commitTurn(scope, batch));
    inject = false;
    expect(error.code).toBe('store_unavailable');
    expect(error.message).toMatch(/^\[tiered\] .*injected crash/);
    expect(error.details).toEqual({ durable_committed: true });

    // The durable part is there, read through the hot-copy path and through a second store.
    const task = await store.getTask(scope, x.task.id);
    expect(task).toMatchObject({ state: 'COLLECTING', version: 2 });
    const other = await openTieredStore(env.url);
    expect(await other.getTask(scope, x.task.id)).toEqual(task);
    expect(await other.getTask({ tenant_id: scope.tenant_id }, x.task.id)).toEqual(task);
    expect((await store.getAction(scope, x.action.id))?.status).toBe('SUCCESS');
    expect((await store.latestCheckpoint(scope, `run-${x.task.id}`))?.channels).toEqual({ step: 1 });
    expect((await store.listTaskEvents(scope, x.task.id)).map((e) => e.to_state)).toEqual([
      'INIT',
      'COLLECTING',
    ]);
    // The session part is not: no patch, no message.
    expect(await store.getSession(scope, x.session.id)).toMatchObject({ version: 1, context: {} });
    expect((await store.listMessages(scope, x.session.id)).map((m) => m.content)).toEqual(['first']);

    // Retrying the same batch is refused by the task's version; nothing else changes.
    const retry = await failure(store.commitTurn(scope, batch));
    expect(retry.code).toBe('version_conflict');
    expect(retry.message).toContain(x.task.id);
    expect((await store.getSession(scope, x.session.id))?.version).toBe(1);
    // The next turn, from what is stored now, goes through; seqs stay gap-free; the lock was released.
    const next = await other.commitTurn(scope, {
      session: { id: x.session.id, expected_version: 1, patch: { context: { turn: 2 } } },
      update_tasks: [{ id: x.task.id, expected_version: 2, patch: { state: 'CONFIRMING' } }],
      messages: { session_id: x.session.id, items: [{ role: 'assistant', content: 'reply again' }] },
    });
    expect(next.messages.map((m) => m.seq)).toEqual([2]);
    expect(next.session?.version).toBe(2);
    expect(await store.getTask(scope, x.task.id)).toEqual(next.tasks[0]);
    await other.close();
    await store.close();
  });

  it('Redis killed in between and restarted empty: every task, action and checkpoint is intact and a new session continues the open task', {
    timeout: 60_000,
  }, async () => {
    const port = await freePort();
    let server = await startRedis(port);
    let killNow = false;
    const store = await openTieredStore(env.urlWith(`redis://127.0.0.1:${port}`), {
      afterDurableCommit: async () => {
        if (killNow) await kill(server);
      },
    });
    try {
      const scope = freshScope();
      const x = await setup(store, scope);
      const run = `run-${x.task.id}`;
      killNow = true;
      const error = await failure(
        store.commitTurn(scope, {
          update_tasks: [
            { id: x.task.id, expected_version: 1, patch: { state: 'COLLECTING', slots: { to: 'LIS' } } },
          ],
          begin_actions: [
            { task_id: x.task.id, type: 'tool_call', params: { q: 2 }, idempotency_key: `k2-${x.task.id}` },
          ],
          checkpoint: { run_id: run, task_id: x.task.id, step: 1, channels: { step: 1 } },
          messages: { session_id: x.session.id, items: [{ role: 'assistant', content: 'lost reply' }] },
        }),
      );
      expect(error.code).toBe('store_unavailable');
      expect(error.details).toEqual({ durable_committed: true });
      killNow = false;

      server = await startRedis(port);
      const deadline = Date.now() + 15_000;
      while (!(await store.ping()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(await store.ping()).toBe(true);

      // Sessions are gone with Redis; the durable records are all there.
      expect(await store.getSession(scope, x.session.id)).toBeNull();
      expect((await store.listSessions(scope)).items).toEqual([]);
      const open = await store.listTasks(scope, { state: OPEN_TASK_STATES });
      expect(open.items.map((k) => [k.id, k.state, k.version, k.slots])).toEqual([
        [x.task.id, 'COLLECTING', 2, { to: 'LIS' }],
      ]);
      expect(await store.getTask(scope, x.task.id)).toEqual(open.items[0]);
      const actions = await store.listActions(scope, { task_id: x.task.id });
      expect(actions.items.map((a) => a.idempotency_key).sort()).toEqual(
        [`k-${x.task.id}`, `k2-${x.task.id}`].sort(),
      );
      expect((await store.latestCheckpoint(scope, run))?.step).toBe(1);

      // A new session of the same user finds the open task and continues it.
      const fresh = await store.createSession(scope, {});
      const found = (await store.listTasks(scope, { state: OPEN_TASK_STATES })).items[0]!;
      const turn = await store.commitTurn(scope, {
        update_tasks: [
          {
            id: found.id,
            expected_version: found.version,
            patch: { session_id: fresh.id, state: 'CONFIRMING' },
          },
        ],
        messages: { session_id: fresh.id, items: [{ role: 'assistant', content: 'Shall I book it?' }] },
      });
      expect(turn.tasks[0]).toMatchObject({ session_id: fresh.id, state: 'CONFIRMING', version: 3 });
      expect(turn.messages.map((m) => m.seq)).toEqual([1]);
      expect((await store.listTasks(scope, { session_id: fresh.id })).items.map((k) => k.id)).toEqual([
        x.task.id,
      ]);
    } finally {
      await store.close();
      await kill(server);
    }
  });

  it('the process dies (SIGKILL) in between: the task advanced, the session shows no half turn, its lock frees itself', {
    timeout: 60_000,
  }, async () => {
    const store = await openTieredStore(env.url);
    const scope = freshScope();
    const x = await setup(store, scope);
    const proc = spawn(
      process.execPath,
      ['--import', 'tsx', CRASH_CHILD, env.url, scope.tenant_id, scope.user_id, x.session.id, x.task.id],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let err = '';
    proc.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString('utf8');
    });
    const signal = await new Promise((resolve) => proc.on('exit', (_code, sig) => resolve(sig)));
    expect(signal, err).toBe('SIGKILL');

    expect(await store.getTask(scope, x.task.id)).toMatchObject({ state: 'COLLECTING', version: 2 });
    expect(await store.getSession(scope, x.session.id)).toMatchObject({ version: 1, context: {} });
    expect((await store.listMessages(scope, x.session.id)).map((m) => m.seq)).toEqual([1]);
    // The dead child's turn lock (1 s) runs out; then the session takes a new turn.
    const next = await store.commitTurn(scope, {
      session: { id: x.session.id, expected_version: 1, patch: { status: 'waiting_for_user' } },
      update_tasks: [{ id: x.task.id, expected_version: 2, patch: { state: 'CONFIRMING' } }],
      messages: { session_id: x.session.id, items: [{ role: 'assistant', content: 'again' }] },
    });
    expect(next.session?.version).toBe(2);
    expect(next.messages.map((m) => m.seq)).toEqual([2]);
    await store.close();
  });

  it('a session update waits for a turn holding the session and then sees its version', async () => {
    let pause: Promise<void> = Promise.resolve();
    let reached: () => void = () => undefined;
    const atPause = new Promise<void>((resolve) => {
      reached = resolve;
    });
    const store = await openTieredStore(env.url, {
      afterDurableCommit: async () => {
        reached();
        await pause;
      },
    });
    const scope = freshScope();
    const x = await setup(store, scope);
    let resume: () => void = () => undefined;
    pause = new Promise<void>((resolve) => {
      resume = resolve;
    });
    const turn = store.commitTurn(scope, {
      session: { id: x.session.id, expected_version: 1, patch: { context: { by: 'turn' } } },
      update_tasks: [{ id: x.task.id, expected_version: 1, patch: { state: 'COLLECTING' } }],
    });
    await atPause;
    const update = store.updateSession(scope, x.session.id, 1, { context: { by: 'update' } });
    const settled = await Promise.race([
      update.then(
        () => 'done',
        () => 'done',
      ),
      new Promise((r) => setTimeout(() => r('waiting'), 300)),
    ]);
    expect(settled).toBe('waiting');
    resume();
    expect((await turn).session?.context).toEqual({ by: 'turn' });
    const error = await failure(update);
    expect(error.code).toBe('version_conflict');
    expect(await store.getSession(scope, x.session.id)).toMatchObject({
      version: 2,
      context: { by: 'turn' },
    });
    await store.close();
  });
});
