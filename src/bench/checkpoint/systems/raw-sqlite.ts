/**
 * The floor: better-sqlite3 inserting the whole state as one JSON text, one row per transaction, at the
 * same journal mode (WAL) and synchronous setting as the other SQLite systems.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { sqliteBaseline, sqliteGrowth } from '../sqlite-size.js';
import type { ReadBack, SystemSpec } from '../system.js';
import { readBack } from '../system.js';

const SCHEMA = `CREATE TABLE IF NOT EXISTS checkpoints (
  run_id TEXT NOT NULL,
  step INTEGER NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (run_id, step)
)`;

function decode(row: { step: number; data: string } | undefined): ReadBack {
  if (row === undefined) throw new Error('raw-sqlite: no checkpoint found');
  const state = JSON.parse(row.data) as { messages?: unknown };
  return readBack(row.step, state.messages);
}

export const rawSqlite: SystemSpec = {
  name: 'raw-sqlite',
  family: 'raw',
  backend: 'sqlite',
  async open(context) {
    const path = join(context.dir, 'raw.db');
    const connect = () => {
      const db = new Database(path);
      db.pragma('journal_mode = WAL');
      db.pragma(`synchronous = ${context.synchronous}`);
      db.exec(SCHEMA);
      return db;
    };
    connect().close();
    const baseline = sqliteBaseline(path);
    const db = connect();
    const insert = db.prepare('INSERT INTO checkpoints (run_id, step, data) VALUES (?, ?, ?)');
    const putOne = db.transaction((run: string, step: number, data: string) => insert.run(run, step, data));
    const latest = db.prepare<[string], { step: number; data: string }>(
      'SELECT step, data FROM checkpoints WHERE run_id = ? ORDER BY step DESC LIMIT 1',
    );
    const history = db.prepare<[string, number], { step: number; data: string }>(
      'SELECT step, data FROM checkpoints WHERE run_id = ? ORDER BY step DESC LIMIT ?',
    );
    const run = (index: number) => `bench-${context.tag}-${index}`;
    const close = async () => {
      if (db.open) db.close();
    };
    return {
      async put(index, step, state) {
        putOne(run(index), step, JSON.stringify(state));
      },
      async latest(index) {
        return decode(latest.get(run(index)));
      },
      async history(index, limit) {
        return history.all(run(index), limit).map(decode);
      },
      async storedBytes() {
        await close();
        return sqliteGrowth(path, baseline);
      },
      close,
    };
  },
};
