/** An end-to-end flight booking over several turns, with the SQLite store re-opened (a new runtime) in the middle. */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { runTurn } from '../../src/runtime/turn.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { ledgerTools, readLedger } from './ledger-tools.js';
import { freshScope, runtimeOptions, START, tempDir } from './setup.js';

describe('flight_booking end to end', () => {
  const temp = tempDir();
  afterEach(() => undefined);

  it('fills slots over several turns, survives a re-opened store, confirms and books once', async () => {
    const file = join(temp.dir, 'e2e.db');
    const ledger = join(temp.dir, 'ledger.jsonl');
    const scope = freshScope();
    const clock = new ManualClock(START);
    let store = await openSqliteStore(file, { clock });
    const session = await store.createSession(scope, {
      agent: 'flight_booking',
      context: { timezone: 'Asia/Shanghai', language: 'zh-CN' },
    });
    const turn = (input: string) =>
      runTurn({ ...runtimeOptions(store, scope, session.id, ledgerTools(ledger), clock), input });

    const t1 = await turn('帮我订下周三从北京到上海的机票');
    expect(t1.reply).toBe('请问要什么舱位：经济舱、商务舱还是头等舱？');
    expect(t1.tasks[0]?.state).toBe('COLLECTING');
    expect(t1.tasks[0]?.status_line).toBe('Booking BJS -> SHA on 2026-12-09: waiting for cabin class');
    expect(t1.session.status).toBe('waiting_for_user');

    clock.advance(60_000);
    const t2 = await turn('商务舱');
    expect(t2.tasks[0]?.slots).toMatchObject({ cabin_class: 'business' });
    expect(t2.reply).toBe('请问乘机人的姓名是？');

    // A new process: the store is closed and opened again, a new runtime continues the same session.
    await store.close();
    store = await openSqliteStore(file, { clock });
    clock.advance(60_000);
    const t3 = await turn('我叫张三');
    expect(t3.tasks[0]?.state).toBe('CONFIRMING');
    expect(t3.reply).toContain('确认预订吗');
    expect(t3.session.status).toBe('waiting_for_user');
    expect(readLedger(ledger)).toHaveLength(0);

    const t4 = await turn('确认');
    expect(t4.tasks[0]?.state).toBe('DONE');
    expect(t4.actions).toHaveLength(1);
    expect(t4.actions[0]?.status).toBe('SUCCESS');
    expect(t4.reply).toContain('已订好');
    expect(t4.session.status).toBe('active');
    const lines = readLedger(ledger);
    expect(lines).toHaveLength(1);
    expect(lines[0]?.params).toEqual({
      origin: 'BJS',
      destination: 'SHA',
      date: '2026-12-09',
      cabin_class: 'business',
      passenger_name: '张三',
    });
    const messages = await store.listMessages(scope, session.id);
    expect(messages.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'user',
      'assistant',
      'user',
      'assistant',
      'user',
      'assistant',
    ]);
    const events = await store.listTaskEvents(scope, t4.tasks[0]!.id);
    expect(events.map((e) => e.to_state)).toEqual(['COLLECTING', 'CONFIRMING', 'EXECUTING', 'DONE']);
    await store.close();
    temp.cleanup();
  });
});
