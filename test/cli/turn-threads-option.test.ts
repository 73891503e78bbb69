/** `serve --turn-threads`: what `auto` (the default) picks, and what a given number is refused for. */
import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { AUTO_TURN_THREADS_MAX, parseTurnThreads, storeServerIsLocal } from '../../src/cli/commands/serve.js';

const cores = availableParallelism();
/** A core left to the main thread. */
const auto = Math.max(0, Math.min(cores - 1, AUTO_TURN_THREADS_MAX));
/** With the store's database server on this machine: one core more left to it. */
const autoLocal = Math.max(0, Math.min(cores - 2, AUTO_TURN_THREADS_MAX));

describe('parseTurnThreads', () => {
  it("auto: a thread per core but the main thread's (at most 4) on stores every thread can open, one fewer for a local server", () => {
    expect(parseTurnThreads('auto', 'sqlite:./.agentstate/agentstate.db', 1)).toBe(auto);
    expect(parseTurnThreads('auto', 'postgres://db.internal/x', 1)).toBe(auto);
    expect(parseTurnThreads('auto', 'redis://cache.internal:6379', 1)).toBe(auto);
    expect(parseTurnThreads('auto', 'sqlite:db.sqlite', 1, 'agents.mjs')).toBe(auto);
    expect(parseTurnThreads('auto', 'postgres://localhost/x', 1)).toBe(autoLocal);
    expect(parseTurnThreads('auto', 'redis://127.0.0.1:6379', 1)).toBe(autoLocal);
  });

  it('tells a database server on this machine from one elsewhere', () => {
    for (const local of [
      'postgres://postgres@127.0.0.1:5432/db',
      'postgresql://u@localhost/db?schema=s',
      'postgres:///db',
      'postgres://u@x/db?host=/var/run/postgresql',
      'postgres://u@[::1]:5432/db',
      'redis://127.0.0.1:6379',
      'redis://cache.internal:6379?durable=postgres://u@127.0.0.1/db',
      'tiered:?redis=redis%3A%2F%2F127.0.0.1%3A6379&postgres=postgres%3A%2F%2Fu%40db.internal%2Fx',
    ])
      expect(storeServerIsLocal(local), local).toBe(true);
    for (const remote of [
      'postgres://u@db.internal:5432/db',
      'redis://cache.internal:6379?durable=postgres://u@db.internal/db',
      'sqlite:./x.db',
      'memory:',
      'tiered:?redis=%zz',
    ])
      expect(storeServerIsLocal(remote), remote).toBe(false);
  });

  it('auto: the main thread for one-thread stores, a cluster, or agents in TypeScript', () => {
    expect(parseTurnThreads('auto', 'memory:', 1)).toBe(0);
    expect(parseTurnThreads('auto', 'sqlite::memory:', 1)).toBe(0);
    expect(parseTurnThreads('auto', 'sqlite:file:x.db?mode=memory', 1)).toBe(0);
    expect(parseTurnThreads('auto', 'sqlite:db.sqlite', 2)).toBe(0);
    expect(parseTurnThreads('auto', 'sqlite:db.sqlite', 1, 'agents.ts')).toBe(0);
  });

  it('takes a number as given, and refuses what cannot work', () => {
    expect(parseTurnThreads('0', 'memory:', 1)).toBe(0);
    expect(parseTurnThreads('3', 'sqlite:db.sqlite', 1, 'agents.ts')).toBe(3);
    expect(() => parseTurnThreads('1', 'memory:', 1)).toThrow(/memory: lives in one thread/);
    expect(() => parseTurnThreads('2', 'sqlite:db.sqlite', 2)).toThrow(/cannot be combined/);
    for (const bad of ['', ' ', '-1', '1.5', '65', 'two', '0x2']) {
      expect(() => parseTurnThreads(bad, 'sqlite:db.sqlite', 1)).toThrow(
        /auto or a whole number from 0 to 64/,
      );
    }
  });
});
