/**
 * A booking completed, the session forked before the confirmation and continued to another flight: the
 * airline's ledger holds exactly the bookings each branch confirmed, and the first is never made twice.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { runTurn } from '../../src/runtime/turn.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { ledgerTools, readLedger } from './ledger-tools.js';
import { freshScope, runtimeOptions, START, tempDir } from './setup.js';

describe('a fork of a booking', () => {
  const temp = tempDir();

  it('books once per confirming branch and never repeats the original booking', async () => {
    const ledger = join(temp.dir, 'ledger.jsonl');
    const scope = freshScope();
    const clock = new ManualClock(START);
    const store = await openSqliteStore(join(temp.dir, 'fork.db'), { clock });
    const original = await store.createSession(scope, {
      agent: 'flight_booking',
      context: { timezone: 'Asia/Shanghai', language: 'zh-CN' },
    });
    const turn = (sessionId: string, input: string) => {
      clock.advance(60_000);
      return runTurn({ ...runtimeOptions(store, scope, sessionId, ledgerTools(ledger), clock), input });
    };
    await turn(original.id, '帮我订下周三从北京到上海的机票');
    await turn(original.id, '商务舱');
    const asked = await turn(original.id, '我叫张三');
    expect(asked.reply).toContain('确认预订吗');
    const booked = await turn(original.id, '确认');
    expect(booked.tasks[0]?.state).toBe('DONE');
    expect(readLedger(ledger)).toHaveLength(1);

    // Forked after the question, before the confirmation: the task is back at CONFIRMING in the fork.
    const fork = await store.forkSession(scope, original.id, { at_seq: 6 });
    const [copied] = (await store.listTasks(scope, { session_id: fork.id })).items;
    expect(copied?.state).toBe('CONFIRMING');
    expect(copied?.data['agentstate.fork']).toMatchObject({
      task_id: booked.tasks[0]?.id,
      actions_done: [],
      actions_after: [booked.actions[0]?.id],
    });
    const changed = await turn(fork.id, '不对，改成经济舱');
    expect(changed.tasks[0]?.id).toBe(copied?.id);
    expect(changed.tasks[0]?.slots).toMatchObject({ cabin_class: 'economy' });
    const again = await turn(fork.id, '确认');
    expect(again.tasks[0]?.state).toBe('DONE');
    expect(again.actions).toHaveLength(1);

    const lines = readLedger(ledger);
    expect(lines.map((l) => (l.params as { cabin_class?: string }).cabin_class)).toEqual([
      'business',
      'economy',
    ]);
    expect(new Set(lines.map((l) => l.key)).size).toBe(2);
    // Each branch reads its own line: the original still ends with its booking, the fork with its own.
    const own = await store.listMessages(scope, original.id);
    const forked = await store.listMessages(scope, fork.id);
    expect(own).toHaveLength(8);
    expect(forked.slice(0, 6).map((m) => m.id)).toEqual(own.slice(0, 6).map((m) => m.id));
    expect(forked.slice(6).map((m) => m.content)).not.toContain('确认预订吗');
    expect(forked.map((m) => m.seq)).toEqual(forked.map((_, i) => i + 1));
    // A second confirmation in the original books nothing more: the original's task is done.
    await turn(original.id, '确认');
    expect(readLedger(ledger)).toHaveLength(2);
    await store.close();
    temp.cleanup();
  });
});
