import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cryptoRandom, isoAt, ManualClock, systemClock } from '../../src/core/clock.js';

describe('ManualClock', () => {
  it('starts at 2026-01-01T00:00:00.000Z by default', () => {
    expect(new ManualClock().now()).toBe(Date.UTC(2026, 0, 1));
  });

  it('starts at a given epoch or ISO time and stays put until moved', () => {
    expect(new ManualClock(1234).now()).toBe(1234);
    const clock = new ManualClock('2026-05-17T08:30:00.000Z');
    expect(clock.now()).toBe(Date.UTC(2026, 4, 17, 8, 30));
    expect(clock.now()).toBe(clock.now());
  });

  it('advances by exactly the sum of the steps and can be set, by number or ISO string', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 86_400_000 }), { maxLength: 20 }), (steps) => {
        const clock = new ManualClock(0);
        for (const step of steps) clock.advance(step);
        expect(clock.now()).toBe(steps.reduce((a, b) => a + b, 0));
      }),
    );
    const clock = new ManualClock();
    clock.set(5);
    expect(clock.now()).toBe(5);
    clock.set('2030-01-01T00:00:00.000Z');
    expect(isoAt(clock.now())).toBe('2030-01-01T00:00:00.000Z');
  });
});

describe('systemClock', () => {
  it('reads the real time', () => {
    const before = Date.now();
    const now = systemClock.now();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
  });
});

describe('isoAt', () => {
  it('formats milliseconds as an ISO-8601 UTC string that parses back to the same instant', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: Date.UTC(9999, 11, 31) }), (ms) => {
        const text = isoAt(ms);
        expect(text).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
        expect(Date.parse(text)).toBe(ms);
      }),
    );
  });
});

describe('cryptoRandom', () => {
  it('returns the number of bytes asked for, different each time', () => {
    for (const count of [0, 1, 16, 64]) expect(cryptoRandom(count)).toHaveLength(count);
    expect(Buffer.from(cryptoRandom(16)).equals(Buffer.from(cryptoRandom(16)))).toBe(false);
  });

  it('hands out every byte once, across refills of its pool, and more than a pool at once', () => {
    // 3,000 draws of 16 bytes span about a dozen 4 KiB pools: no two are alike, and none is all zeros.
    const seen = new Set<string>();
    for (let i = 0; i < 3000; i++) {
      const bytes = cryptoRandom(16);
      expect(bytes).toHaveLength(16);
      seen.add(Buffer.from(bytes).toString('hex'));
    }
    expect(seen.size).toBe(3000);
    expect(seen.has('0'.repeat(32))).toBe(false);
    // Odd sizes straddle the end of a pool; a request larger than the pool is served whole.
    const odd = Array.from({ length: 600 }, () => Buffer.from(cryptoRandom(13)).toString('hex'));
    expect(new Set(odd).size).toBe(600);
    expect(cryptoRandom(10_000)).toHaveLength(10_000);
  });

  it('gives a caller its own copy: changing it changes no other draw', () => {
    const first = cryptoRandom(16);
    const copy = Uint8Array.from(first);
    const second = cryptoRandom(16);
    first.fill(0);
    expect(Buffer.from(second).equals(Buffer.from(copy))).toBe(false);
    expect(second.every((byte) => byte === 0)).toBe(false);
    expect(second.buffer).not.toBe(first.buffer);
  });
});
