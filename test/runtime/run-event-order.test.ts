/**
 * A run's final event is its last: streamed text still waiting when the final commit joins the log's queue
 * goes with that commit, even when the text's own flush timer fires while the commit waits behind an
 * earlier write (before, the flush took the text and stored it after the final event).
 */
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { RunContext } from '../../src/runtime/run-context.js';
import { RunEventLog } from '../../src/runtime/run-events.js';
import { createMemoryStore } from '../../src/store/memory/index.js';
import type { StateStore } from '../../src/store/types.js';
import { freshScope } from './setup.js';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the order of a run’s events', () => {
  it('stores the text that waits when the final commit is queued before the final event', async () => {
    const inner = createMemoryStore();
    let slow = true;
    // The first stored flush of text takes 100 ms: the final commit queues behind it.
    const store = new Proxy(inner, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (property === 'appendRunEvents' && slow) {
          slow = false;
          return async (...args: Parameters<StateStore['appendRunEvents']>) => {
            await pause(100);
            return target.appendRunEvents(...args);
          };
        }
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }) as StateStore;
    const scope = freshScope();
    const session = await inner.createSession(scope, {});
    const runId = 'run_order';
    const header = { run_id: runId, session_id: session.id, agent: 'a', model: 'm', input: 'hi' };
    const rt = new RunContext(store, scope, header, systemClock, [], async () => undefined);
    const log = new RunEventLog(store, scope, session.id, runId, { flushMs: 20, flushChars: 10 });
    rt.events = log;
    rt.finalEvent = () => ({ type: 'run.completed', data: { done: true } });
    log.delta('first piece, long enough');
    await pause(40); // its timer fired: the slow write is in flight
    log.delta(' the rest'); // waits for its own timer (20 ms)
    const final = rt.commit(
      'turn',
      { messages: { session_id: session.id, items: [{ role: 'user', content: 'hi' }] } },
      null,
    );
    await pause(50); // the rest's timer fires while the final commit waits behind the slow write
    await final;
    await log.drain();
    const events = await inner.listRunEvents(scope, session.id, runId, { limit: 100 });
    expect(events.at(-1)?.type).toBe('run.completed');
    const text = events.filter((e) => e.type === 'message.delta').map((e) => e.data.text);
    expect(text.join('')).toBe('first piece, long enough the rest');
  });
});
