import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { ManualClock } from '../../src/core/clock.js';
import { AgentStateError } from '../../src/core/errors.js';
import { openStore } from '../../src/store/open.js';
import type { StateStore } from '../../src/store/types.js';
import { createDatabase } from './postgres-env.js';
import { REDIS_URL, randomPrefix, removePrefix, urlWithPrefix } from './redis-env.js';

export interface Adapter {
  readonly name: string;
  /** Opens a store over fresh data (per test file); `cleanup` removes it. */
  open(clock: ManualClock): Promise<{ store: StateStore; cleanup: () => Promise<void> }>;
}

export const ADAPTERS: Adapter[] = [
  {
    name: 'memory',
    open: async (clock) => {
      const store = await openStore('memory:', { clock });
      return { store, cleanup: () => store.close() };
    },
  },
  {
    name: 'sqlite',
    open: async (clock) => {
      const dir = mkdtempSync(join(tmpdir(), 'agentstate-attach-'));
      const store = await openStore(`sqlite:${join(dir, 'state.db')}`, { clock });
      return {
        store,
        cleanup: async () => {
          await store.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  },
  {
    name: 'postgres',
    open: async (clock) => {
      const db = await createDatabase();
      const store = await openStore(db.url, { clock });
      return {
        store,
        cleanup: async () => {
          await store.close();
          await db.drop();
        },
      };
    },
  },
  {
    name: 'redis',
    open: async (clock) => {
      const prefix = randomPrefix();
      const store = await openStore(urlWithPrefix(prefix), { clock });
      return {
        store,
        cleanup: async () => {
          await store.close();
          await removePrefix(prefix);
        },
      };
    },
  },
  {
    name: 'tiered',
    open: async (clock) => {
      const db = await createDatabase();
      const prefix = randomPrefix();
      const url = `${REDIS_URL.replace(/\/$/, '')}/?prefix=${prefix}&durable=${encodeURIComponent(db.url)}`;
      const store = await openStore(url, { clock });
      return {
        store,
        cleanup: async () => {
          await store.close();
          await removePrefix(prefix);
          await db.drop();
        },
      };
    },
  },
];

/** The rejection of `promise`: its code and message (fails the test when it resolves). */
export async function refusal(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(AgentStateError);
    const e = error as AgentStateError;
    return { code: e.code, message: e.message };
  }
  throw new Error('expected a refusal, but the call succeeded');
}

export async function expectSessionNotFound(promise: Promise<unknown>, sessionId: string): Promise<void> {
  const { code, message } = await refusal(promise);
  expect(code).toBe('not_found');
  expect(message).toContain(sessionId);
  expect(message).toMatch(/session/);
}
