/** The conversation of idempotency-kill.test.ts (each user's inputs and the replies they must get) and its records. */

/** `Kill` and letters for the index (no digits: the rules model takes the name whole). */
export function passengerOf(index: number): string {
  let tail = '';
  let n = index;
  do {
    tail = 'abcdefghijklmnopqrstuvwxyz'[n % 26] + tail;
    n = Math.floor(n / 26) - 1;
  } while (n >= 0);
  return `Ada Kill${tail}`;
}

export const inputsOf = (name: string) => [
  'Book a flight from Beijing to Shanghai next Wednesday',
  'economy',
  name,
  'yes',
];

export const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export const repliesOf = (name: string) => [
  /^Which cabin class: economy, business or first\?$/,
  /^What is the passenger's full name\?$/,
  new RegExp(
    `^Please confirm: economy class from BJS to SHA on \\d{4}-\\d{2}-\\d{2} for ${literal(name)}\\. Shall I book it\\? \\(yes/no\\)$`,
  ),
  new RegExp(
    `^Booked: BJS to SHA on \\d{4}-\\d{2}-\\d{2} for ${literal(name)}\\. Booking reference (bk_\\w+)\\.$`,
  ),
];

/** One attempt of one request, for the figures and for a failure's account. */
export interface Attempt {
  readonly turn: number;
  readonly at: number;
  /** The server generation that was up (or last up) when the attempt was sent. */
  readonly generation: number;
  readonly outcome: string;
}

export interface User {
  readonly index: number;
  readonly userId: string;
  readonly name: string;
  readonly inputs: string[];
  sessionId: string;
  readonly replies: (string | null)[];
  readonly replayed: boolean[];
  readonly resumed: boolean[];
  /** Per turn: whether an attempt was cut (the server died under it, or before it answered). */
  readonly cut: boolean[];
  /** Per turn: when (ms since the epoch) the attempt that got the 200 was sent. */
  readonly answeredFrom: number[];
  readonly attempts: Attempt[];
  failure: string | null;
}

/**
 * Why a request was sent again: its connection refused (no server listening) or cut (the server died
 * under it, or before it answered); 409 because its key is still in progress, or the session's lease is
 * still held (by a dead server: both lapse within about 10 s), or another conflict; a 5xx.
 */
export type Reason = 'refused' | 'cut' | 'in_progress' | 'busy' | 'conflict' | '5xx';

export interface TurnAnswer {
  readonly reply?: string;
  readonly resumed?: boolean;
}

export interface Message {
  readonly seq: number;
  readonly role: string;
  readonly content: string;
  readonly metadata: Record<string, unknown>;
  readonly created_at: string;
}

export interface Kill {
  readonly at: number;
  readonly afterMs: number;
  /** Fired because few turns remained, before its delay. */
  readonly early: boolean;
  /** Turns not yet answered when it fired. */
  readonly remaining: number;
  readonly generation: number;
  readonly inFlight: string[];
  restartedAt: number;
}
