/** The conformance suite against the memory store, plus what only the memory store does. */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { isAgentStateError } from '../../src/core/errors.js';
import { isId } from '../../src/core/ids.js';
import { createMemoryStore, MAX_SWEEP_LIMIT, MemoryStore } from '../../src/store/memory/index.js';
import { openStore } from '../../src/store/open.js';
import { describeStoreConformance } from '../../src/testing/index.js';

describeStoreConformance('memory', {
  open: async (clock) => createMemoryStore({ clock }),
});

/** A deterministic random source: a counter, so ids are reproducible. */
function counterRandom() {
  let n = 0;
  return (bytes: number) => Uint8Array.from({ length: bytes }, () => n++ % 256);
}

const scope = { tenant_id: 't1', user_id: 'u1' };

describe('memory store specifics', () => {
  it('opens from the memory: URL, one process only, not durable', async () => {
    const store = await openStore('memory:');
    expect(store).toBeInstanceOf(MemoryStore);
    expect(store.adapter).toBe('memory');
    expect(store.capabilities).toEqual({ multiProcess: false, durable: false });
    expect(await store.ping()).toBe(true);
    await store.close();
  });

  it('uses the system clock by default', async () => {
    const store = createMemoryStore();
    const before = Date.now();
    const session = await store.createSession(scope, { ttl_seconds: 60 });
    expect(Date.parse(session.created_at)).toBeGreaterThanOrEqual(before - 1);
    expect(Date.parse(session.created_at)).toBeLessThanOrEqual(Date.now());
    await store.close();
  });

  it('honours defaultSessionTtlSeconds and never mutates the options', async () => {
    const clock = new ManualClock('2026-05-01T00:00:00.000Z');
    const options = Object.freeze({ clock, defaultSessionTtlSeconds: 120 });
    const store = createMemoryStore(options);
    const session = await store.createSession(scope, {});
    expect(session.ttl_seconds).toBe(120);
    expect(session.expires_at).toBe('2026-05-01T00:02:00.000Z');
    expect(options).toEqual({ clock, defaultSessionTtlSeconds: 120 });
  });

  it('refuses a bad defaultSessionTtlSeconds', () => {
    for (const ttl of [0, -1, 1.5]) {
      let caught: unknown = null;
      try {
        createMemoryStore({ defaultSessionTtlSeconds: ttl });
      } catch (error) {
        caught = error;
      }
      expect(isAgentStateError(caught, 'invalid_request')).toBe(true);
    }
  });

  it('takes ids from the injected random source', async () => {
    const a = createMemoryStore({ random: counterRandom() });
    const b = createMemoryStore({ random: counterRandom() });
    const first = await a.createSession(scope, {});
    const second = await b.createSession(scope, {});
    expect(isId(first.id, 'session')).toBe(true);
    expect(first.id).toBe(second.id);
  });

  it('two memory stores share nothing', async () => {
    const a = createMemoryStore();
    const b = createMemoryStore();
    const session = await a.createSession(scope, {});
    expect(await b.getSession(scope, session.id)).toBeNull();
    await b.createSession(scope, { id: session.id });
    expect((await a.listSessions(scope)).items).toHaveLength(1);
  });

  it('refuses a sweep limit above MAX_SWEEP_LIMIT', async () => {
    const store = createMemoryStore();
    await expect(store.sweepExpired(MAX_SWEEP_LIMIT + 1)).rejects.toMatchObject({ code: 'invalid_request' });
    expect(await store.sweepExpired(MAX_SWEEP_LIMIT)).toBe(0);
  });

  it('a call that fails half-way leaves no trace, also in the records it wrote before failing', async () => {
    const clock = new ManualClock();
    const store = createMemoryStore({ clock });
    const session = await store.createSession(scope, {});
    const task = await store.createTask(scope, { type: 'x' });
    await expect(
      store.commitTurn(scope, {
        session: { id: session.id, expected_version: 1, patch: { status: 'paused' } },
        create_tasks: [{ type: 'new' }],
        update_tasks: [{ id: task.id, expected_version: 1, patch: { state: 'DONE' } }],
      }),
    ).rejects.toMatchObject({ code: 'invalid_request' });
    expect(await store.getSession(scope, session.id)).toEqual(session);
    expect((await store.listTasks(scope)).items).toEqual([task]);
    // the next writes number as if the failed call never happened
    const next = await store.updateSession(scope, session.id, 1, { status: 'paused' });
    expect(next.version).toBe(2);
  });
});
