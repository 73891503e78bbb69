import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { JsonObject, JsonValue } from '../../src/core/json.js';
import { assertPlainJsonObject, isPlainJsonObject } from '../../src/core/json.js';
import {
  type BlobRow,
  ChannelDecoder,
  encodeChannels,
  MAX_CHAIN_DEPTH,
  type Manifest,
  MissingBlobError,
  manifestHashes,
  missingBases,
  type RunMemo,
  runMemo,
} from '../../src/store/shared/checkpoint-codec.js';
import { jsonValue } from './json-arbitraries.js';

/** One change between two checkpoints of a run. */
type Op =
  | { op: 'append'; channel: string; items: JsonValue[] }
  | { op: 'replace'; channel: string; at: number; item: JsonValue }
  | { op: 'truncate'; channel: string; keep: number }
  | { op: 'set'; channel: string; value: JsonValue }
  | { op: 'field'; channel: string; key: string; value: JsonValue }
  | { op: 'drop'; channel: string }
  | { op: 'none' };

// 'constructor' and '__proto__' check that a channel named like an Object.prototype member is kept as a channel.
const channelArb = fc.constantFrom('messages', 'task', 'misc', 'constructor', '__proto__');

/** Sets an own property, even one named __proto__. */
function setChannel(target: JsonObject, name: string, value: JsonValue): void {
  Object.defineProperty(target, name, { value, enumerable: true, writable: true, configurable: true });
}
const small = jsonValue(2);

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('append' as const),
      channel: channelArb,
      items: fc.array(small, { minLength: 1, maxLength: 3 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('replace' as const),
      channel: channelArb,
      at: fc.nat(6),
      item: small,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('truncate' as const), channel: channelArb, keep: fc.nat(4) }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('set' as const), channel: channelArb, value: small }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('field' as const),
      channel: channelArb,
      key: fc.constantFrom('step', 'status', 'x'),
      value: small,
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('drop' as const), channel: channelArb }) },
  { weight: 1, arbitrary: fc.constant({ op: 'none' as const }) },
);

function apply(state: JsonObject, change: Op): JsonObject {
  const next: JsonObject = structuredClone(state);
  if (change.op === 'none') return next;
  const current = Object.hasOwn(next, change.channel) ? next[change.channel] : undefined;
  switch (change.op) {
    case 'append':
      setChannel(next, change.channel, [...(Array.isArray(current) ? current : []), ...change.items]);
      break;
    case 'replace':
      if (Array.isArray(current) && current.length > 0) current[change.at % current.length] = change.item;
      break;
    case 'truncate':
      if (Array.isArray(current)) current.length = Math.min(current.length, change.keep);
      break;
    case 'set':
      setChannel(next, change.channel, change.value);
      break;
    case 'field': {
      const base = current !== null && typeof current === 'object' && !Array.isArray(current) ? current : {};
      setChannel(next, change.channel, { ...base, [change.key]: change.value });
      break;
    }
    case 'drop':
      delete next[change.channel];
      break;
  }
  return next;
}

/** Encodes states one after another like a durable store: blobs kept insert-or-ignore, by hash. */
function storeRun(states: readonly JsonObject[]): {
  manifests: Manifest[];
  blobs: Map<string, BlobRow>;
  written: BlobRow[][];
} {
  const blobs = new Map<string, BlobRow>();
  const manifests: Manifest[] = [];
  const written: BlobRow[][] = [];
  let previous: Manifest | null = null;
  for (const state of states) {
    const encoded = encodeChannels(structuredClone(state), previous);
    for (const blob of encoded.blobs) if (!blobs.has(blob.hash)) blobs.set(blob.hash, blob);
    manifests.push(encoded.manifest);
    written.push(encoded.blobs);
    previous = encoded.manifest;
  }
  return { manifests, blobs, written };
}

const runArb = fc
  .tuple(fc.dictionary(channelArb, small), fc.array(opArb, { maxLength: 40 }))
  .map(([first, ops]) => {
    const states: JsonObject[] = [first];
    for (const change of ops) states.push(apply(states[states.length - 1] as JsonObject, change));
    return states;
  });

describe('checkpoint codec', () => {
  it('decodes every manifest of a run of random changes back to its state', () => {
    let appendBlobs = 0;
    fc.assert(
      fc.property(runArb, (states) => {
        const { manifests, blobs } = storeRun(states);
        for (const blob of blobs.values()) if (blob.base !== null) appendBlobs++;
        expect(missingBases(blobs)).toEqual([]);
        const history = new ChannelDecoder(blobs); // one decoder for a whole history read
        manifests.forEach((manifest, i) => {
          for (const hash of manifestHashes(manifest)) expect(blobs.has(hash)).toBe(true);
          for (const ref of Object.values(manifest)) expect(ref.d).toBeLessThanOrEqual(MAX_CHAIN_DEPTH);
          expect(new ChannelDecoder(blobs).decode(manifest)).toEqual(states[i]);
          expect(history.decode(manifest)).toEqual(states[i]);
        });
      }),
      { numRuns: 150 },
    );
    expect(appendBlobs).toBeGreaterThan(30); // the generator does exercise append chains
  });

  it('names a value by its content: the same hash whether stored whole or as an append', () => {
    fc.assert(
      fc.property(runArb, (states) => {
        const { manifests } = storeRun(states);
        manifests.forEach((manifest, i) => {
          const alone = encodeChannels(states[i] as JsonObject, null).manifest;
          expect(manifestHashes(manifest)).toEqual(manifestHashes(alone));
        });
      }),
      { numRuns: 100 },
    );
  });

  it('a chain memo changes nothing: same manifests and blobs as without, also against a stale previous', () => {
    fc.assert(
      fc.property(runArb, fc.array(fc.nat(40), { maxLength: 5 }), (states, skips) => {
        const memo: RunMemo = new Map();
        let previous: Manifest | null = null;
        states.forEach((state, i) => {
          // Now and then the memo's run moves on without this writer (another process wrote in between).
          if (skips.includes(i)) encodeChannels(structuredClone(state), null, memo);
          const withMemo = encodeChannels(structuredClone(state), previous, memo);
          const without = encodeChannels(structuredClone(state), previous);
          expect(withMemo).toEqual(without);
          previous = withMemo.manifest;
        });
      }),
      { numRuns: 150 },
    );
  });

  it('runMemo hands back the same memo for a run and a fresh one for another', () => {
    const a = runMemo('["t","u","run-a"]');
    a.set('x', { elements: ['1'], chains: ['a:', 'ax'] });
    expect(runMemo('["t","u","run-a"]')).toBe(a);
    expect(runMemo('["t","u","run-b"]').size).toBe(0);
  });

  it('a missing blob fails with MissingBlobError naming its hash', () => {
    const { manifest } = encodeChannels({ list: [1, 2] }, null);
    expect(() => new ChannelDecoder(new Map()).decode(manifest)).toThrow(MissingBlobError);
  });

  it('the fast JSON check agrees with the guard', () => {
    const guardAccepts = (value: unknown) => {
      try {
        assertPlainJsonObject(value, 'v');
        return true;
      } catch {
        return false;
      }
    };
    fc.assert(
      fc.property(fc.dictionary(fc.string(), jsonValue(3)), (value) => {
        expect(isPlainJsonObject(value)).toBe(guardAccepts(value));
      }),
    );
    const sparse: unknown[] = [1];
    sparse[2] = 3;
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    const bad: unknown[] = [
      { a: Number.NaN },
      { a: -0 },
      { a: undefined },
      { a: sparse },
      { a: new Date(0) },
      { a: 'x\ud800' },
      { '\udc00': 1 },
      { a: () => 1 },
      { a: 1n },
      { [Symbol('s')]: 1 },
      cycle,
      [],
      null,
      Object.create({ inherited: 1 }),
    ];
    for (const value of bad) expect([isPlainJsonObject(value), guardAccepts(value)]).toEqual([false, false]);
    expect(isPlainJsonObject(Object.assign(Object.create(null), { a: 1 }))).toBe(true);
    const shared = { x: 1 };
    expect(isPlainJsonObject({ a: shared, b: [shared, shared] })).toBe(true); // shared, not a cycle
  });

  it('only writes a blob when a channel changed', () => {
    fc.assert(
      fc.property(fc.dictionary(channelArb, small), (state) => {
        const first = encodeChannels(state, null);
        const again = encodeChannels(structuredClone(state), first.manifest);
        expect(again.manifest).toEqual(first.manifest);
        expect(again.blobs).toEqual([]);
      }),
    );
  });

  it('stores a growing message list as appends of the new elements, chains capped at MAX_CHAIN_DEPTH', () => {
    const message = (i: number) => ({
      role: i % 2 ? 'assistant' : 'user',
      content: `${i} `.padEnd(200, 'x'),
    });
    const states: JsonObject[] = [];
    let messages: JsonValue[] = Array.from({ length: 20 }, (_, i) => message(i));
    for (let step = 0; step < 40; step++) {
      if (step > 0) messages = [...messages, message(19 + step)];
      states.push({ messages, task: { id: 'task_1', step } });
    }
    const { manifests, blobs, written } = storeRun(states);
    let appendBytes = 0;
    let appendedBytes = 0;
    for (let step = 1; step < states.length; step++) {
      const ref = manifests[step]?.messages;
      const previous = manifests[step - 1]?.messages;
      const expectedDepth = step % (MAX_CHAIN_DEPTH + 1);
      expect(ref?.d).toBe(expectedDepth);
      expect(ref?.n).toBe(20 + step);
      const blob = written[step]?.find((row) => row.hash === ref?.h);
      expect(blob).toBeDefined();
      if (expectedDepth === 0) {
        expect(blob?.base).toBeNull();
        continue;
      }
      const appended = JSON.stringify([message(19 + step)]);
      expect(blob?.base).toBe(previous?.h);
      expect(blob?.data).toBe(appended);
      appendBytes += blob?.data.length ?? 0;
      appendedBytes += appended.length;
      expect(written[step]).toHaveLength(2); // the append and the changed task, nothing else
    }
    expect(appendBytes).toBe(appendedBytes);
    const wholeBytes = [...blobs.values()]
      .filter((b) => b.base === null)
      .reduce((n, b) => n + b.data.length, 0);
    const snapshots = states.reduce((n, s) => n + JSON.stringify(s).length, 0);
    expect(appendBytes + wholeBytes).toBeLessThan(snapshots / 4);
    states.forEach((state, i) => {
      expect(new ChannelDecoder(blobs).decode(manifests[i] as Manifest)).toEqual(state);
    });
  });

  it('stores the array whole again when an element before the end changed', () => {
    const first = encodeChannels({ list: [1, 2, 3] }, null);
    const changed = encodeChannels({ list: [1, 9, 3, 4] }, first.manifest);
    expect(changed.manifest.list?.d).toBe(0);
    expect(changed.blobs).toEqual([{ hash: changed.manifest.list?.h, base: null, data: '[1,9,3,4]' }]);
  });

  // A channel named "__proto__" passes the plain-JSON guard (JSON.parse makes it an own key); the codec must
  // define it as an own property rather than assign it, or the channel would be silently dropped.
  it('keeps a channel named __proto__', () => {
    const channels = JSON.parse('{"__proto__": [1, 2], "task": {"step": 1}}') as JsonObject;
    const { manifest, blobs } = encodeChannels(channels, null);
    const store = new Map(blobs.map((blob) => [blob.hash, blob]));
    expect(Object.keys(manifest)).toEqual(['__proto__', 'task']);
    expect(Object.keys(new ChannelDecoder(store).decode(manifest))).toEqual(['__proto__', 'task']);
  });
});
