/** The stores the durable-run tests use: memory:, a SQLite file, and PostgreSQL in a schema of its own. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newId } from '../../src/core/ids.js';
import { openStore } from '../../src/store/open.js';
import type { Scope, StateStore } from '../../src/store/types.js';
import { dropSchema, randomSchema, schemaUrl } from '../store/postgres-env.js';

export interface TestStore {
  readonly name: string;
  /** A URL another process can open, or null for memory:. */
  readonly url: string | null;
  open(): Promise<StateStore>;
  cleanup(): Promise<void>;
}

export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'agentstate-durable-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export function freshScope(): Scope {
  return { tenant_id: `t_${newId('run').slice(4, 14)}`, user_id: `u_${newId('run').slice(4, 14)}` };
}

export function sqliteStore(dir: string, file = 'durable.db'): TestStore {
  const url = `sqlite:${join(dir, file)}`;
  return { name: 'SQLite', url, open: () => openStore(url), cleanup: async () => undefined };
}

export function postgresStore(): TestStore {
  const schema = randomSchema();
  const url = schemaUrl(schema);
  return { name: 'PostgreSQL', url, open: () => openStore(url), cleanup: () => dropSchema(schema) };
}

export function memoryStore(): TestStore {
  return { name: 'memory', url: null, open: () => openStore('memory:'), cleanup: async () => undefined };
}
