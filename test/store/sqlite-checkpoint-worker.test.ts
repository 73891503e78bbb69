/**
 * WAL checkpoints in a worker thread (src/store/sqlite/background-checkpoint.ts): committed pages reach the
 * database file without the writing connection checkpointing, the writer's own threshold becomes a
 * fallback, and closing the store ends the worker (the WAL file goes with the last connection).
 */
import { existsSync, mkdtempSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SqlDriver } from '../../src/store/sql/executor.js';
import { CHECKPOINT_EVERY_WRITES, openSqliteDriver } from '../../src/store/sqlite/driver.js';
import { DEFAULT_SQLITE_CHECKPOINT_MS, openSqliteStore } from '../../src/store/sqlite/index.js';

const dir = mkdtempSync(join(tmpdir(), 'agentstate-sqlite-ckpt-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const fresh = () => join(dir, `db-${++files}.sqlite`);

const ROW_BYTES = 8_192;

/** 100 write transactions of one 8 KiB row each (text): about 300 WAL pages, below any automatic checkpoint. */
async function writeRows(driver: SqlDriver): Promise<void> {
  await driver.transaction((tx) => tx.run('CREATE TABLE t (id INTEGER PRIMARY KEY, data TEXT)'));
  for (let i = 0; i < 100; i++) {
    await driver.transaction((tx) =>
      tx.run('INSERT INTO t (data) VALUES (?)', [String(i % 10).repeat(ROW_BYTES)]),
    );
  }
}

async function autocheckpoint(driver: SqlDriver): Promise<number> {
  const row = await driver.query.get('PRAGMA wal_autocheckpoint');
  return Number(row?.wal_autocheckpoint);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('sqlite background checkpoints', () => {
  it('copies committed pages into the database file while the writer never checkpoints', async () => {
    const file = fresh();
    const driver = openSqliteDriver(file, {
      synchronous: 'NORMAL',
      busyTimeoutMs: 1000,
      backgroundCheckpointMs: 10,
    });
    await writeRows(driver);
    // the writer's own automatic checkpoint only acts far behind the worker
    expect(await autocheckpoint(driver)).toBe(4000);
    let size = 0;
    for (let waited = 0; waited < 5000 && size < 100 * ROW_BYTES; waited += 20) {
      await sleep(20);
      size = statSync(file).size;
    }
    expect(size).toBeGreaterThanOrEqual(100 * ROW_BYTES);
    await driver.close();
    // the worker closed its connection first: the writer's was the last, and took the WAL with it
    expect(existsSync(`${file}-wal`)).toBe(false);
  });

  it('checkpoints every CHECKPOINT_EVERY_WRITES commits, not only on its timer', async () => {
    const file = fresh();
    // a timer that never fires within the test: only the writer's requests checkpoint
    const driver = openSqliteDriver(file, {
      synchronous: 'NORMAL',
      busyTimeoutMs: 1000,
      backgroundCheckpointMs: 600_000,
    });
    await driver.transaction((tx) => tx.run('CREATE TABLE t (id INTEGER PRIMARY KEY, data TEXT)'));
    const insert = (i: number) =>
      driver.transaction((tx) =>
        tx.run('INSERT INTO t (data) VALUES (?)', [String(i % 10).repeat(ROW_BYTES)]),
      );
    // the worker starts at the 64th write; up to the request before the 128th nothing is copied
    for (let i = 1; i < CHECKPOINT_EVERY_WRITES - 1; i++) await insert(i);
    await sleep(300);
    const before = statSync(file).size;
    expect(before).toBeLessThan(64 * ROW_BYTES);
    await insert(CHECKPOINT_EVERY_WRITES);
    let size = before;
    for (let waited = 0; waited < 5000 && size < 100 * ROW_BYTES; waited += 20) {
      await sleep(20);
      size = statSync(file).size;
    }
    expect(size).toBeGreaterThanOrEqual(100 * ROW_BYTES);
    await driver.close();
  });

  it('without the worker the same writes stay in the WAL (the comparison the first test rests on)', async () => {
    const file = fresh();
    const driver = openSqliteDriver(file, {
      synchronous: 'NORMAL',
      busyTimeoutMs: 1000,
      backgroundCheckpointMs: 0,
    });
    await writeRows(driver);
    await sleep(200);
    expect(await autocheckpoint(driver)).toBe(1000);
    expect(statSync(file).size).toBeLessThan(100 * ROW_BYTES);
    expect(statSync(`${file}-wal`).size).toBeGreaterThan(100 * ROW_BYTES);
    await driver.close();
  });

  it('starts no worker for a store used briefly, nor for :memory:', async () => {
    const brief = openSqliteDriver(fresh(), {
      synchronous: 'NORMAL',
      busyTimeoutMs: 1000,
      backgroundCheckpointMs: 10,
    });
    await brief.transaction((tx) => tx.run('CREATE TABLE t (id INTEGER PRIMARY KEY)'));
    for (let i = 0; i < 10; i++) await brief.query.run('INSERT INTO t DEFAULT VALUES');
    expect(await autocheckpoint(brief)).toBe(1000);
    await brief.close();
    const memory = openSqliteDriver(':memory:', {
      synchronous: 'NORMAL',
      busyTimeoutMs: 1000,
      backgroundCheckpointMs: 10,
    });
    await writeRows(memory);
    expect(await autocheckpoint(memory)).toBe(1000);
    await memory.close();
  });

  it('a worker that cannot open the database hands checkpoints back to the writing connection', async () => {
    const file = fresh();
    const driver = openSqliteDriver(file, {
      synchronous: 'NORMAL',
      busyTimeoutMs: 1000,
      backgroundCheckpointMs: 10,
    });
    await driver.transaction((tx) => tx.run('CREATE TABLE t (id INTEGER PRIMARY KEY)'));
    for (let i = 0; i < 62; i++) await driver.query.run('INSERT INTO t DEFAULT VALUES');
    // the name is gone (the open connection keeps its file): the worker, started by the next write, fails
    unlinkSync(file);
    await driver.query.run('INSERT INTO t DEFAULT VALUES');
    // started (no event-loop turn has passed, so its failure cannot have been heard yet) ...
    let setting = await autocheckpoint(driver);
    expect(setting).toBe(4000);
    // ... then gone
    for (let waited = 0; waited < 5000 && setting !== 1000; waited += 20) {
      await sleep(20);
      setting = await autocheckpoint(driver);
    }
    expect(setting).toBe(1000);
    await driver.close();
  });

  it('is on by default in the store, and the option is checked', async () => {
    expect(DEFAULT_SQLITE_CHECKPOINT_MS).toBe(1000);
    await expect(openSqliteStore(fresh(), { sqliteCheckpointMs: -1 })).rejects.toThrow(/sqliteCheckpointMs/);
    await expect(openSqliteStore(fresh(), { sqliteCheckpointMs: 1.5 })).rejects.toThrow(/sqliteCheckpointMs/);
    // longer than a Node timer can wait (it would fire every millisecond instead)
    await expect(openSqliteStore(fresh(), { sqliteCheckpointMs: 2 ** 31 })).rejects.toThrow(
      /sqliteCheckpointMs must be at most 2147483647/,
    );
  });
});
