import { randomBytes } from 'node:crypto';

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

export const cryptoRandom: RandomSource = (bytes) => randomBytes(bytes);

export function isoAt(ms: number): string {
  return new Date(ms).toISOString();
}
