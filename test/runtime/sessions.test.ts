/** Run leases (one process per session at a time) and tasks that outlive their session. */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { isAgentStateError } from '../../src/core/errors.js';
import { resumeContext, summarizeTasks } from '../../src/runtime/context.js';
import { resumeRun, runTurn } from '../../src/runtime/turn.js';
import { createMemoryStore } from '../../src/store/memory/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { crashingStore, SimulatedCrash } from './faults.js';
import { ledgerTools } from './ledger-tools.js';
import { freshScope, runtimeOptions, START, tempDir } from './setup.js';

const temp = tempDir();
afterAll(() => temp.cleanup());

describe('run lease', () => {
  it('refuses a second runner with a clear conflict and changes nothing; a dead owner’s lease expires', async () => {
    const clock = new ManualClock(START);
    const store = createMemoryStore({ clock });
    const scope = freshScope();
    const session = await store.createSession(scope, { agent: 'flight_booking' });
    const tools = ledgerTools(join(temp.dir, 'lease.jsonl'));
    expect(await store.acquireLease(scope, `session:${session.id}`, 'other-process', 30_000)).not.toBeNull();
    const refused = await runTurn({
      ...runtimeOptions(store, scope, session.id, tools, clock),
      input: 'book a flight',
    }).catch((error: unknown) => error);
    expect(isAgentStateError(refused, 'conflict')).toBe(true);
    expect((refused as Error).message).toContain(`session ${session.id} is being run by another process`);
    expect(await store.listMessages(scope, session.id)).toEqual([]);
    expect((await store.listTasks(scope, {})).items).toEqual([]);
    clock.advance(30_001); // the other process died: its lease runs out
    const out = await runTurn({
      ...runtimeOptions(store, scope, session.id, tools, clock),
      input: 'book a flight',
    });
    expect(out.reply).toBe('Where are you flying from?');
  });

  it('waits, when asked, for a dead owner’s lease to run out', async () => {
    const store = createMemoryStore();
    const scope = freshScope();
    const session = await store.createSession(scope, { agent: 'flight_booking' });
    const tools = ledgerTools(join(temp.dir, 'wait.jsonl'));
    await store.acquireLease(scope, `session:${session.id}`, 'dead-process', 300);
    const now = runTurn({ ...runtimeOptions(store, scope, session.id, tools), input: 'book a flight' });
    await expect(now).rejects.toThrow(/being run by another process/);
    const started = Date.now();
    const waited = await runTurn({
      ...runtimeOptions(store, scope, session.id, tools),
      lease: { waitMs: 30_000 },
      input: 'book a flight',
    });
    expect(waited.reply).toBe('Where are you flying from?');
    // The dead lease ran out after 300 ms: the turn took it then, not at the end of its 30 s wait.
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it('lets exactly one of two concurrent turns of one session run (SQLite)', async () => {
    const store = await openSqliteStore(join(temp.dir, 'lease.db'));
    const scope = freshScope();
    const session = await store.createSession(scope, { agent: 'flight_booking' });
    const tools = ledgerTools(join(temp.dir, 'lease2.jsonl'));
    const results = await Promise.allSettled([
      runTurn({ ...runtimeOptions(store, scope, session.id, tools), input: 'book a flight to Shanghai' }),
      runTurn({ ...runtimeOptions(store, scope, session.id, tools), input: 'book a flight to Chengdu' }),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const rejected = results.find((r) => r.status === 'rejected');
    expect(isAgentStateError(rejected?.reason, 'conflict')).toBe(true);
    expect((await store.listTasks(scope, {})).items).toHaveLength(1);
    expect(await store.listMessages(scope, session.id)).toHaveLength(2);
    await store.close();
  });
});

describe('a session changed between a crash and its resume', () => {
  it('finishes the run on the session as it is now', async () => {
    const store = createMemoryStore();
    const scope = freshScope();
    const session = await store.createSession(scope, { agent: 'flight_booking' });
    const tools = ledgerTools(join(temp.dir, 'patched.jsonl'));
    await expect(
      runTurn({
        ...runtimeOptions(crashingStore(store, 1), scope, session.id, tools),
        input: 'book a flight to Tokyo',
      }),
    ).rejects.toThrow(SimulatedCrash);
    const patched = await store.updateSession(scope, session.id, session.version, { context: { vip: true } });
    const out = await resumeRun(runtimeOptions(store, scope, session.id, tools));
    expect(out?.reply).toBe('Where are you flying from?');
    expect(out?.session.status).toBe('waiting_for_user');
    expect(out?.session.context).toEqual({ vip: true });
    expect(out?.session.version).toBe(patched.version + 1);
  });
});

describe('tasks outlive sessions', () => {
  it('a new session of the same user finds the open task of an expired session and continues it', async () => {
    const clock = new ManualClock(START);
    const store = createMemoryStore({ clock });
    const scope = freshScope();
    const tools = ledgerTools(join(temp.dir, 'orphan.jsonl'));
    const old = await store.createSession(scope, {
      agent: 'flight_booking',
      ttl_seconds: 60,
      context: { timezone: 'Asia/Shanghai' },
    });
    const first = await runTurn({
      ...runtimeOptions(store, scope, old.id, tools, clock),
      input: 'Fly from Beijing to Shanghai tomorrow',
    });
    expect(first.tasks[0]?.status_line).toBe('Booking BJS -> SHA on 2026-12-03: waiting for cabin class');
    clock.advance(120_000);
    expect(await store.getSession(scope, old.id)).toBeNull();

    const fresh = await store.createSession(scope, {
      agent: 'flight_booking',
      context: { timezone: 'Asia/Shanghai' },
    });
    const ctx = await resumeContext(store, scope, fresh.id);
    expect(ctx.tasks).toEqual([]);
    const next = await runTurn({
      ...runtimeOptions(store, scope, fresh.id, tools, clock),
      input: 'business class',
    });
    expect(next.tasks[0]?.id).toBe(first.tasks[0]?.id);
    expect(next.tasks[0]?.session_id).toBe(fresh.id);
    expect(next.tasks[0]?.slots).toMatchObject({
      origin: 'BJS',
      destination: 'SHA',
      date: '2026-12-03',
      cabin_class: 'business',
    });
    expect(next.reply).toBe("What is the passenger's full name?");

    const resumed = await resumeContext(store, scope, fresh.id, { lastMessages: 1 });
    expect(resumed.messages.map((m) => m.content)).toEqual(["What is the passenger's full name?"]);
    expect(resumed.summary).toContain(
      '[COLLECTING] Booking BJS -> SHA on 2026-12-03: waiting for passenger name',
    );
    expect(resumed.summary).toContain('cabin_class=business');
    expect(summarizeTasks([])).toBe('No open tasks.');
  });

  it('keeps several tasks apart in one session: routing by missing slot, cancel, confirmation', async () => {
    const store = createMemoryStore();
    const scope = freshScope();
    const tools = ledgerTools(join(temp.dir, 'multi.jsonl'));
    const session = await store.createSession(scope, {
      agent: 'assistant',
      context: { timezone: 'Asia/Shanghai' },
    });
    const turn = (input: string) => runTurn({ ...runtimeOptions(store, scope, session.id, tools), input });
    const a = await turn('帮我订张去上海的票');
    expect(a.reply).toBe('请问从哪里出发？');
    const b = await turn('再帮我订张去成都的');
    expect(b.tasks.map((t) => t.slots.destination)).toEqual(['CTU', 'SHA']);
    const c = await turn('从北京出发，明天，商务舱，我叫李雷');
    expect(c.tasks[0]?.slots).toMatchObject({ origin: 'BJS', destination: 'CTU', passenger_name: '李雷' });
    expect(c.tasks[0]?.state).toBe('CONFIRMING');
    const d = await turn('取消');
    expect(d.reply).toContain('已取消：Booking BJS -> CTU');
    const e = await turn('deploy checkout-api');
    expect(e.reply).toBe(
      'Deployed checkout-api latest to staging: https://checkout-api.staging.example (5 steps).',
    );
    const open = (await store.listTasks(scope, { state: ['COLLECTING', 'CONFIRMING'] })).items;
    expect(open.map((t) => t.slots.destination)).toEqual(['SHA']);
  });
});
