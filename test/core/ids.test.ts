import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RandomSource } from '../../src/core/clock.js';
import { ID_PREFIXES, type IdKind, isId, newId } from '../../src/core/ids.js';

const KINDS = Object.keys(ID_PREFIXES) as IdKind[];
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';

/** RFC 4648 base32 decoding (lowercase, no padding), written independently of src/core/ids.ts. */
function decodeBase32(text: string, byteCount: number): Uint8Array {
  let bits = '';
  for (const char of text) {
    const index = ALPHABET.indexOf(char);
    expect(index).toBeGreaterThanOrEqual(0);
    bits += index.toString(2).padStart(5, '0');
  }
  const out = new Uint8Array(byteCount);
  for (let i = 0; i < byteCount; i++) out[i] = Number.parseInt(bits.slice(i * 8, i * 8 + 8), 2);
  expect(/^0*$/.test(bits.slice(byteCount * 8))).toBe(true); // padding bits are zero
  return out;
}

/** A deterministic random source: a seeded xorshift, so two sources with one seed give the same bytes. */
function seededRandom(seed: number): RandomSource {
  let state = seed >>> 0 || 1;
  return (count) => {
    const bytes = new Uint8Array(count);
    for (let i = 0; i < count; i++) {
      state ^= state << 13;
      state ^= state >>> 17;
      state ^= state << 5;
      state >>>= 0;
      bytes[i] = state & 0xff;
    }
    return bytes;
  };
}

describe('newId', () => {
  it('is the kind prefix plus 26 base32 characters (130 bits, holding all 128 random bits)', () => {
    expect(26 * 5).toBeGreaterThanOrEqual(128);
    for (const kind of KINDS) {
      const id = newId(kind);
      expect(id.startsWith(ID_PREFIXES[kind])).toBe(true);
      const body = id.slice(ID_PREFIXES[kind].length);
      expect(body).toMatch(/^[a-z2-7]{26}$/);
    }
    expect(newId('session')).toMatch(/^sess_/);
    expect(newId('task')).toMatch(/^task_/);
    expect(newId('action')).toMatch(/^act_/);
    expect(newId('checkpoint')).toMatch(/^ckpt_/);
  });

  it('asks the random source for 16 bytes and encodes every one of them', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 16, maxLength: 16 }),
        fc.constantFrom(...KINDS),
        (bytes, kind) => {
          const asked: number[] = [];
          const id = newId(kind, (count) => {
            asked.push(count);
            return bytes;
          });
          expect(asked).toEqual([16]);
          expect(decodeBase32(id.slice(ID_PREFIXES[kind].length), 16)).toEqual(bytes);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('gives reproducible ids from an injected random source, and distinct ids from distinct bytes', () => {
    const first = Array.from(
      { length: 5 },
      (
        (random) => () =>
          newId('run', random)
      )(seededRandom(42)),
    );
    const again = Array.from(
      { length: 5 },
      (
        (random) => () =>
          newId('run', random)
      )(seededRandom(42)),
    );
    const other = Array.from(
      { length: 5 },
      (
        (random) => () =>
          newId('run', random)
      )(seededRandom(43)),
    );
    expect(again).toEqual(first);
    expect(new Set(first).size).toBe(5);
    expect(other).not.toEqual(first);
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 16, maxLength: 16 }),
        fc.uint8Array({ minLength: 16, maxLength: 16 }),
        (a, b) => {
          const same = a.every((byte, i) => byte === b[i]);
          expect(newId('task', () => a) === newId('task', () => b)).toBe(same);
        },
      ),
    );
  });

  it('uses fresh randomness by default', () => {
    const ids = new Set(Array.from({ length: 1000 }, () => newId('message')));
    expect(ids.size).toBe(1000);
  });
});

describe('isId', () => {
  it('accepts every generated id, of its own kind only', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 16, maxLength: 16 }),
        fc.constantFrom(...KINDS),
        (bytes, kind) => {
          const id = newId(kind, () => bytes);
          expect(isId(id)).toBe(true);
          expect(isId(id, kind)).toBe(true);
          for (const other of KINDS) if (other !== kind) expect(isId(id, other)).toBe(false);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('refuses what only looks like an id', () => {
    const good = newId('session', () => new Uint8Array(16).fill(7));
    const body = good.slice('sess_'.length);
    expect(isId(good)).toBe(true);
    for (const bad of [
      '',
      body,
      `sess_${body.slice(1)}`,
      `${good}a`,
      good.toUpperCase(),
      `sess_${body.slice(0, 25)}1`,
      `sess_${body.slice(0, 25)}8`,
      `user_${body}`,
      `xsess_${body}`,
      ` ${good}`,
      `${good}\n`,
    ]) {
      expect(isId(bad), bad).toBe(false);
    }
  });
});
