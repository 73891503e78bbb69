import { appendFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import {
  appendLedger,
  countSideEffects,
  duplicateSideEffects,
  LedgerAppender,
  readLedger,
} from '../../src/demo/ledger.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ledger-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

it('counts side effects per key and names the duplicates', () => {
  const path = join(dir, 'l.jsonl');
  expect(countSideEffects(path)).toEqual({});
  for (const key of ['a', 'b', 'a', 'a'])
    appendLedger(path, { key, tool: 't', fingerprint: 'f', result: { key } });
  expect(countSideEffects(path)).toEqual({ a: 3, b: 1 });
  expect(duplicateSideEffects(path)).toEqual({ keys: ['a'], extra: 2 });
});

it('skips a torn last line left by a killed writer, and the next append starts on a fresh line', () => {
  const path = join(dir, 'l.jsonl');
  appendLedger(path, { key: 'a', tool: 't', fingerprint: 'f', result: 1 });
  appendFileSync(path, '{"key":"b","tool":"t","finger');
  expect(readLedger(path).map((e) => e.key)).toEqual(['a']);
  appendLedger(path, { key: 'c', tool: 't', fingerprint: 'f', result: null });
  expect(readLedger(path).map((e) => e.key)).toEqual(['a', 'c']);
});

it('an appender writes batches to its open file, starting on a fresh line after a torn one, and reopens after close', async () => {
  const path = join(dir, 'sub', 'l.jsonl');
  const appender = new LedgerAppender(path);
  await appender.append([]);
  expect(existsSync(path)).toBe(false);
  await appender.append([{ key: 'a', tool: 't', fingerprint: 'f', result: 1 }]);
  await appender.close();
  appendFileSync(path, '{"key":"b","tool":"t","finger');
  const again = new LedgerAppender(path);
  await again.append([
    { key: 'c', tool: 't', fingerprint: 'f', result: null },
    { key: 'd', tool: 't', fingerprint: 'f', result: [1] },
  ]);
  await again.append([{ key: 'e', tool: 't', fingerprint: 'f', result: 'x' }]);
  expect(readLedger(path).map((e) => e.key)).toEqual(['a', 'c', 'd', 'e']);
  await again.close();
  await again.close();
  await again.append([{ key: 'f', tool: 't', fingerprint: 'f', result: 2 }]);
  await again.close();
  expect(readLedger(path).map((e) => e.key)).toEqual(['a', 'c', 'd', 'e', 'f']);
});
