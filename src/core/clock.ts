import { randomBytes, randomFillSync } from 'node:crypto';

/** The source of time. Injected everywhere so tests control it. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock a test moves by hand. */
export class ManualClock implements Clock {
  private current: number;
  constructor(start: number | string = '2026-01-01T00:00:00.000Z') {
    this.current = typeof start === 'number' ? start : Date.parse(start);
  }
  now(): number {
    return this.current;
  }
  advance(ms: number): void {
    this.current += ms;
  }
  set(ms: number | string): void {
    this.current = typeof ms === 'number' ? ms : Date.parse(ms);
  }
}

/** The source of randomness. Injected so tests can make ids reproducible. */
export type RandomSource = (bytes: number) => Uint8Array;

/**
 * Bytes drawn from the system's CSPRNG this many at a time: an id takes 16, so one call serves 256 ids
 * (a call per id cost more than the rest of making the id). Every byte is handed out once.
 */
const POOL_BYTES = 4096;
let pool = new Uint8Array(0);
let poolOffset = 0;

export const cryptoRandom: RandomSource = (bytes) => {
  if (bytes > POOL_BYTES) return randomBytes(bytes);
  if (poolOffset + bytes > pool.length) {
    pool = randomFillSync(new Uint8Array(POOL_BYTES));
    poolOffset = 0;
  }
  const out = pool.slice(poolOffset, poolOffset + bytes);
  poolOffset += bytes;
  return out;
};

export function isoAt(ms: number): string {
  return new Date(ms).toISOString();
}
