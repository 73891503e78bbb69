/**
 * Forking a long session, per store:
 *
 *   node --import tsx src/bench/fork/main.ts [--stores sqlite,postgres,redis,memory] [--messages 100000]
 *        [--forks 20] [--turns 50]
 *
 * For a session of 100 messages and one of `--messages`: the time to fork it (p50 of `--forks` forks at
 * its last message), the bytes a fork stores (its session record as JSON, with its history's reference,
 * and its branch index entry), and a turn's reads and writes (the last 20 messages, then 2 appended) on
 * the fork against the same on the original.
 */
import { parseArgs } from 'node:util';
import type { Scope, StateStore } from '../../store/types.js';
import { openBenchStore } from '../stores.js';

const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

async function timed(work: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  await work();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

async function longSession(store: StateStore, scope: Scope, n: number): Promise<string> {
  const s = await store.createSession(scope, { ttl_seconds: 86_400 });
  for (let at = 0; at < n; at += 1000) {
    const batch = Array.from({ length: Math.min(1000, n - at) }, (_, i) => ({
      role: 'user' as const,
      content: `message ${at + i + 1} of a long conversation about flights and hotels`,
    }));
    await store.appendMessages(scope, s.id, batch);
  }
  return s.id;
}

async function turnMs(store: StateStore, scope: Scope, id: string, turns: number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < turns; i++) {
    times.push(
      await timed(async () => {
        await store.lastMessages(scope, id, 20);
        await store.appendMessages(scope, id, [
          { role: 'user', content: `turn ${i}` },
          { role: 'assistant', content: `answer ${i}` },
        ]);
      }),
    );
  }
  return p50(times);
}

async function benchStore(name: string, messages: number, forks: number, turns: number): Promise<string[]> {
  const bench = await openBenchStore(name, 'fork');
  const { store } = bench;
  const scope = { tenant_id: 'bench', user_id: 'u1' };
  const rows: string[] = [];
  try {
    for (const n of [100, messages]) {
      const id = await longSession(store, scope, n);
      const times: number[] = [];
      let bytes = 0;
      for (let i = 0; i < forks; i++) {
        let fork = null as Awaited<ReturnType<StateStore['forkSession']>> | null;
        times.push(
          await timed(async () => {
            fork = await store.forkSession(scope, id, { at_seq: n });
          }),
        );
        if (fork !== null)
          bytes = JSON.stringify(fork).length + JSON.stringify({ session_id: fork.id }).length;
      }
      const fork = await store.forkSession(scope, id, { at_seq: n });
      const onFork = await turnMs(store, scope, fork.id, turns);
      const onOriginal = await turnMs(store, scope, id, turns);
      rows.push(
        `| ${name} | ${n.toLocaleString('en')} | ${p50(times).toFixed(2)} ms | ${bytes} B | ${onOriginal.toFixed(2)} ms | ${onFork.toFixed(2)} ms | ${(onFork / onOriginal).toFixed(2)} |`,
      );
    }
  } finally {
    await bench.done();
  }
  return rows;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      stores: { type: 'string', default: 'sqlite,postgres,redis,memory' },
      messages: { type: 'string', default: '100000' },
      forks: { type: 'string', default: '20' },
      turns: { type: 'string', default: '50' },
    },
  });
  const lines = [
    '| store | messages | fork p50 | stored per fork | turn p50, original | turn p50, fork | fork / original |',
    '| --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const name of values.stores.split(',')) {
    lines.push(
      ...(await benchStore(name, Number(values.messages), Number(values.forks), Number(values.turns))),
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

await main();
