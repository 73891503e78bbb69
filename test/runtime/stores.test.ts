/** The runtime over every store adapter: a multi-turn booking, and a crash after the third tool call resumed. */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resumeRun, runTurn, type TurnOutput } from '../../src/runtime/turn.js';
import { openStore } from '../../src/store/open.js';
import type { StateStore } from '../../src/store/types.js';
import { dropSchema, randomSchema, schemaUrl } from '../store/postgres-env.js';
import { randomPrefix, removePrefix, urlWithPrefix } from '../store/redis-env.js';
import { tieredEnv } from '../store/tiered-env.js';
import { crashingStore, SimulatedCrash } from './faults.js';
import { ledgerTools, readLedger } from './ledger-tools.js';
import { freshScope, runtimeOptions, tempDir } from './setup.js';

const temp = tempDir();
const schema = randomSchema();
const prefix = randomPrefix();
const tiered = tieredEnv();
afterAll(async () => {
  temp.cleanup();
  await dropSchema(schema);
  await removePrefix(prefix);
  await tiered.cleanup();
});

const STORES: [string, () => string][] = [
  ['memory', () => 'memory:'],
  ['sqlite', () => `sqlite:${join(temp.dir, 'stores.db')}`],
  ['postgres', () => schemaUrl(schema)],
  ['redis', () => urlWithPrefix(prefix)],
  ['tiered', () => tiered.url],
];

function comparable(out: TurnOutput | null) {
  return {
    reply: out?.reply,
    tasks: out?.tasks.map((t) => [t.state, t.slots, t.status_line]),
    actions: out?.actions.map((a) => [a.tool, a.status, a.params, a.result]),
  };
}

describe.each(STORES)('runtime on %s', (name, url) => {
  let store: StateStore;

  it('books a flight over four turns', async () => {
    store = await openStore(url());
    const scope = freshScope();
    const session = await store.createSession(scope, {
      agent: 'flight_booking',
      context: { timezone: 'Asia/Shanghai' },
    });
    const ledger = join(temp.dir, `${name}-flight.jsonl`);
    const turn = (input: string) =>
      runTurn({ ...runtimeOptions(store, scope, session.id, ledgerTools(ledger)), input });
    expect((await turn('明天从广州飞成都，经济舱')).reply).toBe('请问乘机人的姓名是？');
    const confirm = await turn('我叫韩梅梅');
    expect(confirm.session.status).toBe('waiting_for_user');
    expect(confirm.tasks[0]?.status_line).toBe('Booking CAN -> CTU on 2026-12-03: waiting for confirmation');
    const booked = await turn('好的');
    expect(booked.tasks[0]?.state).toBe('DONE');
    expect(readLedger(ledger)).toHaveLength(1);
    expect((await store.listMessages(scope, session.id)).map((m) => m.seq)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('resumes a deploy killed after its third tool call with the same output and no duplicate', async () => {
    const scope = freshScope();
    const input = 'deploy billing 3.1 to staging';
    const ref = await store.createSession(scope, { agent: 'deploy_pipeline' });
    const reference = await runTurn({
      ...runtimeOptions(store, scope, ref.id, ledgerTools(join(temp.dir, `${name}-ref.jsonl`))),
      input,
    });
    const ledger = join(temp.dir, `${name}-crash.jsonl`);
    const session = await store.createSession(scope, { agent: 'deploy_pipeline' });
    await expect(
      runTurn({ ...runtimeOptions(crashingStore(store, 8), scope, session.id, ledgerTools(ledger)), input }),
    ).rejects.toThrow(SimulatedCrash);
    const resumed = await resumeRun(runtimeOptions(store, scope, session.id, ledgerTools(ledger)));
    expect(resumed?.resumed).toBe(true);
    expect(comparable(resumed)).toEqual(comparable(reference));
    expect(readLedger(ledger)).toHaveLength(5);
    await store.close();
  });
});
