/** The conformance suite against the SQLite store: one temp database file shared by every test. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { describeStoreConformance } from '../../src/testing/index.js';

const dir = mkdtempSync(join(tmpdir(), 'agentstate-sqlite-'));
const file = join(dir, 'nested', 'conformance.db');

describeStoreConformance('sqlite', {
  open: (clock) => openSqliteStore(file, { clock }),
  url: `sqlite:${file}`,
  cleanup: async () => rmSync(dir, { recursive: true, force: true }),
});
