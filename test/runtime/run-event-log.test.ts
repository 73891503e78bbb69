/**
 * The run's event log merges a model's streamed text: a reply that comes in one piece waits for the run's
 * next commit (no write of its own); a stream goes out in chunks of at least ~100 characters or ~50 ms,
 * never a write per piece; the pieces' text arrives whole and in order; writes go one after another.
 */
import { describe, expect, it } from 'vitest';
import { RunEventLog } from '../../src/runtime/run-events.js';
import { createMemoryStore } from '../../src/store/memory/index.js';
import type { StateStore } from '../../src/store/types.js';
import { freshScope } from './setup.js';

async function setup() {
  const inner = createMemoryStore();
  let appends = 0;
  const store = new Proxy(inner, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (property === 'appendRunEvents') appends++;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as StateStore;
  const scope = freshScope();
  const session = await inner.createSession(scope, {});
  const log = new RunEventLog(store, scope, session.id, 'run_test', { flushMs: 50, flushChars: 100 });
  const stored = () => inner.listRunEvents(scope, session.id, 'run_test', { limit: 1000 });
  return { log, stored, appends: () => appends };
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the run event log', () => {
  it('keeps a one-piece reply for the next commit', async () => {
    const t = await setup();
    t.log.add('run.started');
    t.log.delta('x'.repeat(500));
    expect(t.log.take().map((e) => e.type)).toEqual(['run.started', 'message.delta']);
    await pause(80);
    expect(t.appends()).toBe(0);
  });

  it('sends a stream in merged chunks, by size or by age, whole and in order', async () => {
    const t = await setup();
    const pieces = Array.from({ length: 60 }, (_, i) => `${i} `.padStart(5, '.'));
    const started = performance.now();
    for (const piece of pieces) {
      t.log.delta(piece);
      await pause(2);
    }
    const elapsed = performance.now() - started;
    await pause(80);
    await t.log.drain();
    const events = await t.stored();
    expect(events.every((e) => e.type === 'message.delta')).toBe(true);
    expect(events.map((e) => e.data.text).join('')).toBe(pieces.join(''));
    // 300 characters over ~120 ms (longer on a loaded machine): a chunk per 100 characters or per 50 ms at
    // most, plus the last, not 60 writes.
    expect(t.appends()).toBeGreaterThanOrEqual(2);
    expect(t.appends()).toBeLessThanOrEqual(300 / 100 + Math.ceil(elapsed / 50) + 1);
    expect(t.appends()).toBeLessThan(pieces.length);
  });

  it('sends a short piece once it is 50 ms old', async () => {
    const t = await setup();
    t.log.delta('Hel');
    t.log.delta('lo');
    await pause(120);
    expect((await t.stored()).map((e) => e.data.text)).toEqual(['Hello']);
    expect(t.appends()).toBe(1);
  });
});
