import { appendFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { appendEffectLine, readEffectLog, tallyEffectLog, tallyEffects } from '../../src/demo/effects.js';
import { appendLedger, LedgerAppender, readLedger } from '../../src/demo/ledger.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ledger-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

it('counts effects per logical step whatever their keys, and calls after a step was done', () => {
  const path = join(dir, 'effects.jsonl');
  expect(readEffectLog(path)).toBeNull();
  expect(() => tallyEffectLog(path)).toThrow(/no effect log/);
  const line = (kind: 'call' | 'effect', key: string, step: string) =>
    appendEffectLine(path, { kind, tool: 't', key, step });
  line('call', 'k1', 'A');
  line('effect', 'k1', 'A');
  line('call', 'k2', 'B');
  line('call', 'k1', 'A'); // a call for A after A was done: redundant
  line('call', 'k3', 'A'); // ... and done again under another key: a duplicate
  line('effect', 'k3', 'A');
  line('effect', 'k2', 'B');
  const tally = tallyEffectLog(path);
  expect(tally).toMatchObject({ calls: 4, effects: 3, duplicate_effects: 1, redundant_calls: 2 });
  expect(tally.steps.A).toEqual({ tool: 't', effects: 2, redundant_calls: 2, keys: ['k1', 'k3'] });
  expect(tally.steps.B).toEqual({ tool: 't', effects: 1, redundant_calls: 0, keys: ['k2'] });
  expect(tallyEffects([]).duplicate_effects).toBe(0);
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
