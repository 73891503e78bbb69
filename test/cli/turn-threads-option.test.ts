/** `serve --turn-threads`: what `auto` (the default) picks, and what a given number is refused for. */
import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { AUTO_TURN_THREADS_MAX, parseTurnThreads } from '../../src/cli/commands/serve.js';

const cores = availableParallelism();
const auto = cores < 2 ? 0 : Math.min(cores, AUTO_TURN_THREADS_MAX);

describe('parseTurnThreads', () => {
  it('auto: one thread per core (at most 4) on stores every thread can open', () => {
    expect(parseTurnThreads('auto', 'sqlite:./.agentstate/agentstate.db', 1)).toBe(auto);
    expect(parseTurnThreads('auto', 'postgres://localhost/x', 1)).toBe(auto);
    expect(parseTurnThreads('auto', 'redis://localhost:6379', 1)).toBe(auto);
    expect(parseTurnThreads('auto', 'sqlite:db.sqlite', 1, 'agents.mjs')).toBe(auto);
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
