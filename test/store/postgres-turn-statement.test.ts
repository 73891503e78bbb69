/**
 * PostgreSQL writes a turn's usual commit (at most one task update, messages, a checkpoint after one it
 * wrote) as one statement, and anything else, or one a guard refuses, as a transaction. Every statement
 * and transaction is counted; a refused statement leaves nothing behind and the transaction says why.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { AgentStateError } from '../../src/core/errors.js';
import { newId } from '../../src/core/ids.js';
import { OPEN_TASK_STATES } from '../../src/core/model.js';
import { MAX_NAMED_STATEMENTS, postgresDriver } from '../../src/store/postgres/driver.js';
import type { SqlDriver, SqlExecutor } from '../../src/store/sql/executor.js';
import { migrate } from '../../src/store/sql/migrate.js';
import { SqlStore } from '../../src/store/sql/store.js';
import type { Scope, TurnBatch } from '../../src/store/types.js';
import { dropSchema, POSTGRES_URL, randomSchema } from './postgres-env.js';

const schema = randomSchema();
const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 3 });
const counts = { statements: 0, transactions: 0 };
const clock = new ManualClock(Date.parse('2026-06-01T00:00:00.000Z'));
let store: SqlStore;

function counting(inner: SqlDriver): SqlDriver {
  const wrap = (q: SqlExecutor): SqlExecutor => ({
    all: (sql, params) => {
      counts.statements++;
      return q.all(sql, params);
    },
    get: (sql, params) => {
      counts.statements++;
      return q.get(sql, params);
    },
    run: (sql, params) => {
      counts.statements++;
      return q.run(sql, params);
    },
  });
  return {
    ...inner,
    query: wrap(inner.query),
    transaction: (fn) => {
      counts.transactions++;
      return inner.transaction((tx) => fn(wrap(tx)));
    },
  };
}

beforeAll(async () => {
  const inner = postgresDriver({ pool, schema, searchPathSet: false });
  await migrate(inner);
  store = new SqlStore('postgres', counting(inner), { clock });
});

afterAll(async () => {
  await pool.end();
  await dropSchema(schema);
});

let users = 0;

/** A session with a task and a run whose first checkpoint this store wrote (as the runtime's 'start'). */
async function turnSetup(sessionTtl?: number) {
  const scope: Scope = { tenant_id: 'tenant', user_id: `user${++users}` };
  const session = await store.createSession(scope, {
    agent: 'a',
    ...(sessionTtl ? { ttl_seconds: sessionTtl } : {}),
  });
  const task = await store.createTask(scope, {
    type: 'booking',
    session_id: session.id,
    state: 'COLLECTING',
  });
  const run_id = `run_${users}`;
  const start = await store.putCheckpoint(scope, {
    run_id,
    session_id: session.id,
    step: 0,
    label: 'start',
    channels: { journal: [{ kind: 'load', value: { session: session.id } }] },
  });
  const batch = (
    patch: NonNullable<TurnBatch['update_tasks']>[number]['patch'],
    expected = task.version,
  ): TurnBatch => ({
    update_tasks: [{ id: task.id, expected_version: expected, patch }],
    messages: {
      session_id: session.id,
      items: [
        { role: 'user', content: 'on the 4th', metadata: { run_id } },
        { role: 'assistant', content: 'Which cabin?', metadata: { run_id, task_ids: [task.id] } },
      ],
    },
    checkpoint: {
      id: newId('checkpoint'),
      run_id,
      session_id: session.id,
      task_id: task.id,
      step: 1,
      parent_id: start.id,
      label: 'turn',
      channels: {
        journal: [
          { kind: 'load', value: { session: session.id } },
          { kind: 'model.extract', value: { date: '2026-06-04', text: 'NUL \u0000 and \u0001 survive' } },
        ],
      },
    },
  });
  return { scope, session, task, start, batch };
}

function reset() {
  counts.statements = 0;
  counts.transactions = 0;
}

describe('a turn in one statement (PostgreSQL)', () => {
  it('writes the usual turn in one statement: task, messages, session, checkpoint, as the reads give them', async () => {
    const { scope, session, task, batch } = await turnSetup();
    reset();
    const done = await store.commitTurn(
      scope,
      batch({ slots: { date: '2026-06-04' }, status_line: 'date set' }),
    );
    expect(counts).toEqual({ statements: 1, transactions: 0 });
    expect(done.tasks).toEqual([await store.getTask(scope, task.id)]);
    expect(done.tasks[0]).toMatchObject({
      version: task.version + 1,
      slots: { date: '2026-06-04' },
      state: 'COLLECTING',
    });
    expect(done.session).toEqual(await store.getSession(scope, session.id));
    expect(done.messages).toEqual(await store.listMessages(scope, session.id));
    expect(done.messages.map((m) => m.seq)).toEqual([1, 2]);
    expect(done.checkpoint).not.toBeNull();
    const read = await store.getCheckpoint(scope, done.checkpoint?.id ?? '');
    expect(read?.channels).toEqual(batch({}).checkpoint?.channels);
    expect(await store.listTaskEvents(scope, task.id)).toHaveLength(1);

    // The next turn's seqs follow, and a move writes its event in the same statement.
    reset();
    const next = await store.commitTurn(scope, {
      ...batch({ state: 'CONFIRMING', cause: 'all slots filled' }, task.version + 1),
      checkpoint: {
        ...(batch({}).checkpoint as NonNullable<TurnBatch['checkpoint']>),
        id: newId('checkpoint'),
        step: 2,
        parent_id: done.checkpoint?.id ?? null,
      },
    });
    expect(counts).toEqual({ statements: 1, transactions: 0 });
    expect(next.messages.map((m) => m.seq)).toEqual([3, 4]);
    const events = await store.listTaskEvents(scope, task.id);
    expect(events.map((e) => [e.from_state, e.to_state, e.cause, e.task_version])).toEqual([
      [null, 'COLLECTING', 'created', 1],
      ['COLLECTING', 'CONFIRMING', 'all slots filled', 3],
    ]);
  });

  it('a stale version: the statement writes nothing, the transaction answers version_conflict', async () => {
    const { scope, session, task, start, batch } = await turnSetup();
    reset();
    const refused = store.commitTurn(scope, batch({ status_line: 'stale' }, task.version + 5));
    await expect(refused).rejects.toMatchObject({ code: 'version_conflict' });
    expect(counts.statements).toBeGreaterThan(1);
    expect(counts.transactions).toBe(1);
    expect(await store.listMessages(scope, session.id)).toEqual([]);
    expect(await store.getSession(scope, session.id)).toEqual(session);
    expect(await store.getTask(scope, task.id)).toEqual(task);
    expect((await store.listCheckpoints(scope, start.run_id)).items.map((c) => c.id)).toEqual([start.id]);
  });

  it('a refused move writes nothing either', async () => {
    const { scope, session, task, batch } = await turnSetup();
    const refused = store.commitTurn(scope, batch({ state: 'DONE' }));
    await expect(refused).rejects.toBeInstanceOf(AgentStateError);
    await expect(refused).rejects.toMatchObject({ code: 'invalid_request' });
    expect(await store.listMessages(scope, session.id)).toEqual([]);
    expect(await store.getTask(scope, task.id)).toEqual(task);
    expect(await store.listTaskEvents(scope, task.id)).toHaveLength(1);
  });

  it('a session of another TTL is one statement too, renewed by its own TTL as the transaction would', async () => {
    const { scope, session, batch } = await turnSetup(120);
    reset();
    clock.advance(1_234);
    const done = await store.commitTurn(scope, batch({ status_line: 'ttl' }));
    expect(counts).toEqual({ statements: 1, transactions: 0 });
    expect(done.session?.expires_at).toBe(new Date(clock.now() + 120_000).toISOString());
    expect(done.messages.map((m) => m.seq)).toEqual([1, 2]);
    expect(await store.getSession(scope, session.id)).toEqual(done.session);
  });

  it('a session patch of TTL, context and status ended, and several parts of each kind, in one statement', async () => {
    const { scope, session, task, start, batch } = await turnSetup();
    const second = await store.createTask(scope, {
      type: 'booking',
      session_id: session.id,
      state: 'COLLECTING',
    });
    const usual = batch({});
    reset();
    clock.advance(500);
    const done = await store.commitTurn(scope, {
      session: {
        id: session.id,
        expected_version: session.version,
        patch: { status: 'ended', ttl_seconds: 600, context: { language: 'zh' } },
      },
      create_tasks: [
        { type: 'booking', session_id: session.id, slots: { n: 1 } },
        { type: 'booking', session_id: session.id, state: 'CONFIRMING', slots: { n: 2 } },
      ],
      update_tasks: [
        { id: task.id, expected_version: task.version, patch: { state: 'CONFIRMING', cause: 'first' } },
        {
          id: second.id,
          expected_version: second.version,
          patch: { slots: { date: 'x' }, status_line: 's2' },
        },
      ],
      begin_actions: [
        { task_id: task.id, type: 'tool_call', params: { i: 1 }, idempotency_key: `a-${task.id}` },
        { task_id: second.id, type: 'tool_call', params: { i: 2 }, idempotency_key: `b-${second.id}` },
      ],
      messages: usual.messages,
      checkpoint: usual.checkpoint,
    });
    expect(counts).toEqual({ statements: 1, transactions: 0 });
    expect(done.session).toEqual(await store.getSession(scope, session.id));
    expect(done.session).toMatchObject({
      status: 'ended',
      ended_at: new Date(clock.now()).toISOString(),
      ttl_seconds: 600,
      expires_at: new Date(clock.now() + 600_000).toISOString(),
      context: { language: 'zh' },
      version: session.version + 1,
    });
    expect(done.tasks).toHaveLength(4);
    for (const written of done.tasks) expect(written).toEqual(await store.getTask(scope, written.id));
    expect(done.tasks.map((t) => t.slots)).toEqual([{ n: 1 }, { n: 2 }, {}, { date: 'x' }]);
    expect(done.actions).toHaveLength(2);
    for (const begun of done.actions) expect(begun).toEqual(await store.getAction(scope, begun.id));
    expect(done.actions.map((a) => a.params)).toEqual([{ i: 1 }, { i: 2 }]);
    expect((await store.listTaskEvents(scope, task.id)).map((e) => e.to_state)).toEqual([
      'COLLECTING',
      'CONFIRMING',
    ]);
    expect(await store.listTaskEvents(scope, second.id)).toHaveLength(1);
    // The run's next turn, after a refused one, is one statement again.
    const next = {
      ...(usual.checkpoint as NonNullable<TurnBatch['checkpoint']>),
      step: 2,
      parent_id: done.checkpoint?.id ?? start.id,
    };
    await expect(
      store.commitTurn(scope, {
        update_tasks: [{ id: second.id, expected_version: 1, patch: { status_line: 'stale' } }],
        checkpoint: { ...next, id: newId('checkpoint') },
      }),
    ).rejects.toMatchObject({ code: 'version_conflict' });
    reset();
    await store.commitTurn(scope, {
      update_tasks: [{ id: second.id, expected_version: 2, patch: { status_line: 'fresh' } }],
      checkpoint: { ...next, id: newId('checkpoint') },
    });
    expect(counts).toEqual({ statements: 1, transactions: 0 });
  });

  it('an explicit task id already taken: conflict from the transaction, and no row of the statement kept', async () => {
    const { scope, session, task, batch } = await turnSetup();
    const blobs = async () =>
      Number((await pool.query(`SELECT count(*) AS n FROM "${schema}".checkpoint_blobs`)).rows[0]?.n);
    const before = await blobs();
    const usual = batch({});
    const refused = store.commitTurn(scope, {
      create_tasks: [{ id: task.id, type: 'booking', session_id: session.id }],
      messages: usual.messages,
      checkpoint: usual.checkpoint,
    });
    await expect(refused).rejects.toMatchObject({ code: 'conflict' });
    expect(await blobs()).toBe(before);
    expect(await store.listMessages(scope, session.id)).toEqual([]);
    const missing = store.commitTurn(scope, {
      begin_actions: [
        { task_id: newId('task'), type: 'tool_call', params: null, idempotency_key: 'nowhere' },
      ],
      messages: usual.messages,
      checkpoint: usual.checkpoint,
    });
    await expect(missing).rejects.toMatchObject({ code: 'not_found' });
    expect(await blobs()).toBe(before);
  });

  it('an expired session: not_found, and nothing written', async () => {
    const { scope, session, task, batch } = await turnSetup(5);
    clock.advance(10_000);
    await expect(store.commitTurn(scope, batch({ status_line: 'late' }))).rejects.toMatchObject({
      code: 'not_found',
    });
    expect(await store.getTask(scope, task.id)).toEqual(task);
    expect(await store.listMessages({ tenant_id: scope.tenant_id }, session.id)).toEqual([]);
  });

  it('a checkpoint id already taken: conflict, and nothing written', async () => {
    const { scope, session, task, start, batch } = await turnSetup();
    const taken = { ...batch({ status_line: 'dup' }) };
    const refused = store.commitTurn(scope, {
      ...taken,
      checkpoint: { ...(taken.checkpoint as NonNullable<TurnBatch['checkpoint']>), id: start.id },
    });
    await expect(refused).rejects.toMatchObject({ code: 'conflict' });
    expect(await store.getTask(scope, task.id)).toEqual(task);
    expect(await store.listMessages(scope, session.id)).toEqual([]);
  });

  it('a first turn (session patch, task created) and a booking (action begun, then completed, memory written) are one statement each', async () => {
    const { scope, session, start, batch } = await turnSetup();
    const usual = batch({});
    reset();
    const first = await store.commitTurn(scope, {
      session: {
        id: session.id,
        expected_version: session.version,
        patch: { status: 'waiting_for_user', agent: 'b' },
      },
      create_tasks: [
        { type: 'booking', session_id: session.id, state: 'CONFIRMING', slots: { from: 'BJS' } },
      ],
      messages: usual.messages,
      checkpoint: usual.checkpoint,
    });
    expect(counts).toEqual({ statements: 1, transactions: 0 });
    expect(first.session).toEqual(await store.getSession(scope, session.id));
    expect(first.session).toMatchObject({
      status: 'waiting_for_user',
      agent: 'b',
      version: session.version + 1,
    });
    const created = first.tasks[0];
    expect(created).toEqual(await store.getTask(scope, created?.id ?? ''));
    expect(
      (await store.listTaskEvents(scope, created?.id ?? '')).map((e) => [e.from_state, e.to_state, e.cause]),
    ).toEqual([[null, 'CONFIRMING', 'created']]);
    const checkpoint = (n: number, parent: string | null) => ({
      ...(usual.checkpoint as NonNullable<TurnBatch['checkpoint']>),
      id: newId('checkpoint'),
      step: n,
      parent_id: parent,
    });
    const task = created as NonNullable<typeof created>;
    reset();
    const before = await store.commitTurn(scope, {
      begin_actions: [
        {
          task_id: task.id,
          session_id: session.id,
          type: 'tool_call',
          tool: 'airline.book',
          params: { a: 1 },
          idempotency_key: `k-${task.id}`,
        },
      ],
      update_tasks: [
        {
          id: task.id,
          expected_version: 1,
          patch: { state: 'EXECUTING', cause: 'confirmed', status_line: 'booking' },
        },
      ],
      messages: usual.messages,
      checkpoint: checkpoint(2, first.checkpoint?.id ?? start.id),
    });
    expect(counts).toEqual({ statements: 1, transactions: 0 });
    const action = before.actions[0];
    expect(action).toEqual(await store.getAction(scope, action?.id ?? ''));
    expect(action).toMatchObject({ status: 'PENDING', attempts: 1 });
    // The booking's final commit writes the user's choices too: one item there already (kept created_at).
    const seat = await store.putMemory(scope, { namespace: 'preferences', key: 'seat', value: 'window' });
    reset();
    const after = await store.commitTurn(scope, {
      put_memory: [
        { namespace: 'preferences', key: 'seat', value: 'aisle' },
        { namespace: 'preferences', key: 'cabin', value: 'business', ttl_seconds: 3600 },
      ],
      list_open_tasks: { session_id: session.id, limit: 100 },
      session: { id: session.id, expected_version: session.version + 1, patch: { status: 'active' } },
      complete_actions: [{ id: action?.id ?? '', status: 'SUCCESS', result: { booking_id: 'bk_1' } }],
      update_tasks: [
        { id: task.id, expected_version: 2, patch: { state: 'DONE', cause: 'all steps succeeded' } },
      ],
      messages: usual.messages,
      checkpoint: checkpoint(3, before.checkpoint?.id ?? null),
    });
    expect(counts).toEqual({ statements: 1, transactions: 0 });
    expect(after.memory).toEqual([
      await store.getMemory(scope, 'preferences', 'seat'),
      await store.getMemory(scope, 'preferences', 'cabin'),
    ]);
    expect(after.memory?.map((m) => m.value)).toEqual(['aisle', 'business']);
    expect(after.memory?.[0]?.created_at).toBe(seat.created_at);
    // The session's open tasks as a read after the commit gives them: the booking (DONE now) is not one.
    const open = await store.listTasks(scope, {
      session_id: session.id,
      state: OPEN_TASK_STATES,
      limit: 100,
    });
    expect(after.open_tasks).toEqual(open.items);
    expect(after.open_tasks?.map((k) => k.id)).not.toContain(task.id);
    expect(after.actions).toEqual([await store.getAction(scope, action?.id ?? '')]);
    expect(after.actions[0]).toMatchObject({ status: 'SUCCESS', result: { booking_id: 'bk_1' } });
    expect(after.tasks).toEqual([await store.getTask(scope, task.id)]);
    expect(after.tasks[0]).toMatchObject({ state: 'DONE', version: 3 });
    expect(after.tasks[0]?.closed_at).not.toBeNull();
    expect(after.session).toEqual(await store.getSession(scope, session.id));
    expect(after.messages.map((m) => m.seq)).toEqual([5, 6]);
    expect((await store.listTaskEvents(scope, task.id)).map((e) => e.to_state)).toEqual([
      'CONFIRMING',
      'EXECUTING',
      'DONE',
    ]);
  });

  it('a key begun before: the transaction answers the existing action; a stale session version: version_conflict', async () => {
    const { scope, session, task, batch } = await turnSetup();
    const usual = batch({});
    const key = `k-${task.id}`;
    const { action } = await store.beginAction(scope, {
      task_id: task.id,
      type: 'tool_call',
      params: null,
      idempotency_key: key,
    });
    reset();
    const again = await store.commitTurn(scope, {
      begin_actions: [{ task_id: task.id, type: 'tool_call', params: null, idempotency_key: key }],
      messages: usual.messages,
      checkpoint: usual.checkpoint,
    });
    expect(counts.transactions).toBe(1);
    expect(again.actions).toEqual([action]);
    const stale = store.commitTurn(scope, {
      session: { id: session.id, expected_version: session.version + 7, patch: { status: 'active' } },
      messages: usual.messages,
      checkpoint: {
        ...(usual.checkpoint as NonNullable<TurnBatch['checkpoint']>),
        id: newId('checkpoint'),
        step: 2,
        parent_id: again.checkpoint?.id ?? null,
      },
    });
    await expect(stale).rejects.toMatchObject({ code: 'version_conflict', details: { kind: 'session' } });
    expect(await store.listMessages(scope, session.id)).toHaveLength(2);
  });

  it('a batch without messages is one statement (no session written); a session patch without messages is a transaction', async () => {
    const { scope, session, task, batch } = await turnSetup();
    const usual = batch({});
    reset();
    const alone = await store.commitTurn(scope, {
      update_tasks: [{ id: task.id, expected_version: task.version, patch: { status_line: 'alone' } }],
      checkpoint: usual.checkpoint,
    });
    expect(counts).toEqual({ statements: 1, transactions: 0 });
    expect(alone.session).toBeNull();
    expect(alone.messages).toEqual([]);
    expect(alone.tasks).toEqual([await store.getTask(scope, task.id)]);
    reset();
    const patched = await store.commitTurn(scope, {
      session: { id: session.id, expected_version: session.version, patch: { status: 'paused' } },
      checkpoint: {
        ...(usual.checkpoint as NonNullable<TurnBatch['checkpoint']>),
        id: newId('checkpoint'),
        step: 2,
        parent_id: alone.checkpoint?.id ?? null,
      },
    });
    expect(counts.transactions).toBe(1);
    expect(patched.session).toMatchObject({ status: 'paused', version: session.version + 1 });
  });

  it('10 concurrent turns of one session: seqs gap-free; 10 naming one task version: exactly one writes anything', async () => {
    const { scope, session, task } = await turnSetup();
    const turn = (i: number, update: boolean): TurnBatch => ({
      ...(update
        ? { update_tasks: [{ id: task.id, expected_version: task.version, patch: { status_line: `w${i}` } }] }
        : {}),
      messages: {
        session_id: session.id,
        items: [0, 1, 2].map((k) => ({ role: 'user' as const, content: `${i}.${k}` })),
      },
      checkpoint: {
        run_id: `${session.id}-${update}-${i}`,
        session_id: session.id,
        step: 0,
        channels: { i },
      },
    });
    reset();
    const appended = await Promise.all(
      Array.from({ length: 10 }, (_, i) => store.commitTurn(scope, turn(i, false))),
    );
    expect(counts.transactions).toBe(0);
    expect((await store.listMessages(scope, session.id, { limit: 100 })).map((m) => m.seq)).toEqual(
      Array.from({ length: 30 }, (_, i) => i + 1),
    );
    for (const r of appended) {
      const seqs = r.messages.map((m) => m.seq);
      expect(seqs).toEqual([seqs[0], (seqs[0] ?? 0) + 1, (seqs[0] ?? 0) + 2]);
    }
    const raced = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => store.commitTurn(scope, turn(i, true))),
    );
    const won = raced.filter((r) => r.status === 'fulfilled');
    expect(won).toHaveLength(1);
    for (const r of raced)
      if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'version_conflict' });
    expect(await store.listMessages(scope, session.id, { limit: 100 })).toHaveLength(33);
    expect((await store.getTask(scope, task.id))?.version).toBe(task.version + 1);
    let stored = 0;
    for (let i = 0; i < 10; i++)
      stored += (await store.listCheckpoints(scope, `${session.id}-true-${i}`)).items.length;
    expect(stored).toBe(1);
  });

  it('names at most MAX_NAMED_STATEMENTS statement texts; the ones past it run unnamed', async () => {
    const inner = postgresDriver({ pool, schema, searchPathSet: false });
    const count = 'SELECT count(*) AS n FROM pg_prepared_statements';
    const added = await inner.transaction(async (tx) => {
      const before = Number((await tx.get(count))?.n);
      for (let i = 0; i < MAX_NAMED_STATEMENTS + 20; i++) {
        expect(await tx.get(`SELECT ${i} AS n, CAST(? AS INTEGER) AS m`, [i])).toEqual({ n: i, m: i });
      }
      return Number((await tx.get(count))?.n) - before;
    });
    // The count's own text took the first name: the loop named the other 999 and sent 21 unnamed.
    expect(added).toBe(MAX_NAMED_STATEMENTS - 1);
  });

  it('another user of the tenant cannot write the turn of a session it does not own', async () => {
    const { scope, session, task, batch } = await turnSetup();
    const other = { tenant_id: scope.tenant_id, user_id: `${scope.user_id}-other` };
    await expect(store.commitTurn(other, batch({ status_line: 'theirs' }))).rejects.toMatchObject({
      code: 'not_found',
    });
    expect(await store.getTask(scope, task.id)).toEqual(task);
    expect(await store.listMessages(scope, session.id)).toEqual([]);
  });
});
