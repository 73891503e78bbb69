/**
 * One simulated user: its own user token and session, then a flight booking over several turns with a
 * think time between them, every exchange kept for the leak check. Values are unique to the user
 * (user id, passenger name, a marker planted in the text of each turn) or learned from the server (session,
 * task and action ids of records that name the user as theirs, run and checkpoint ids, booking reference).
 */
import { randomInt } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { bearer, type Exchange, send } from './http.js';

export type Phase = 'warmup' | 'back_to_back' | 'baseline' | 'load' | 'saturation' | 'round_trips';

export interface SimUser {
  readonly phase: Phase;
  readonly index: number;
  readonly userId: string;
  readonly passengerName: string;
  readonly inputs: readonly string[];
  token: string;
  sessionId: string | null;
  readonly taskIds: Set<string>;
  readonly actionIds: Set<string>;
  /** Booking references, run ids and checkpoint ids seen in this user's answers. */
  readonly references: Set<string>;
  /**
   * When each learned value (ids, references) was first seen, in the order of the whole run: a value two
   * users claim belongs to the one who had it first (whose turn made it), not to whoever saw it later.
   */
  readonly learnedAt: Map<string, number>;
  /** The markers this user wrote, one in the text of each turn it sent: free text only it knows. */
  readonly planted: string[];
  readonly exchanges: Exchange[];
  /** Latency of each turn request, in ms, and when it started (performance.now()). */
  readonly turns: { readonly ms: number; readonly startedAt: number; readonly endedAt: number }[];
  readonly errors: string[];
  booked: boolean;
}

const CITY_NAMES = ['Beijing', 'Shanghai', 'Guangzhou', 'Shenzhen', 'Chengdu', 'Hangzhou', 'Tokyo', 'Paris'];
const CABINS = ['economy', 'business', 'first'];
const LETTERS = 'abcdefghijklmnopqrstuvwxyz';

/**
 * A marker for one turn's text: `mk` and 10 random letters, one word that the rules model takes for none of
 * a city, a date, a cabin, a name, a yes or a no.
 */
export function textMarker(): string {
  return `mk${randomLetters(10)}`;
}

/** The input as sent: the script's words, then the marker in parentheses (after any name, so not part of it). */
export function withMarker(input: string, marker: string): string {
  return `${input} (${marker})`;
}

export function randomLetters(n: number): string {
  let out = '';
  for (let i = 0; i < n; i++) out += LETTERS[randomInt(LETTERS.length)];
  return out;
}

/** `Passenger-Qxkzvbtrmw`: letters only, so the rules model takes it whole as a person's name. */
export function passengerName(): string {
  const tail = randomLetters(10);
  return `Passenger-${tail[0]?.toUpperCase()}${tail.slice(1)}`;
}

function isoDateInDays(days: number): string {
  return new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);
}

/** The five booking turns (origin and destination, date, cabin, name, confirm), then status questions. */
export function bookingInputs(index: number, name: string, turns: number): string[] {
  const origin = CITY_NAMES[index % CITY_NAMES.length] as string;
  const destination = CITY_NAMES[(index + 1 + randomInt(CITY_NAMES.length - 1)) % CITY_NAMES.length];
  const script = [
    `I want to book a flight from ${origin} to ${destination}`,
    `on ${isoDateInDays(20 + randomInt(300))}`,
    `${CABINS[randomInt(CABINS.length)]} class please`,
    `my name is ${name}`,
    'yes',
  ];
  const inputs = script.slice(0, turns);
  while (inputs.length < turns) inputs.push('thanks');
  return inputs;
}

/**
 * What the i-th turn of the booking script (0-based) asks of the agent: filling the trip's slots (route,
 * date, cabin, name), confirming it (the booking: the airline's call and its action), or a chat after it.
 */
export type TurnKind = 'slot_filling' | 'confirming' | 'after';

export function turnKind(index: number): TurnKind {
  return index < 4 ? 'slot_filling' : index === 4 ? 'confirming' : 'after';
}

export function newUser(phase: Phase, index: number, runTag: string, turns: number): SimUser {
  const name = passengerName();
  return {
    phase,
    index,
    userId: `lt-${runTag}-${phase}-${randomLetters(8)}`,
    passengerName: name,
    inputs: bookingInputs(index, name, turns),
    token: '',
    sessionId: null,
    taskIds: new Set(),
    actionIds: new Set(),
    references: new Set(),
    learnedAt: new Map(),
    planted: [],
    exchanges: [],
    turns: [],
    errors: [],
    booked: false,
  };
}

export interface Target {
  readonly url: string;
  readonly apiKey: string;
}

interface OwnedRecord {
  readonly id: string;
  readonly user_id?: string;
}

interface TurnBody {
  readonly reply?: string;
  readonly run_id?: string;
  readonly checkpoint_id?: string | null;
  readonly tasks?: OwnedRecord[];
  readonly actions?: OwnedRecord[];
}

/** Run-wide order of first sightings (see `learnedAt`). */
let sightings = 0;

function seen(user: SimUser, value: string): void {
  if (!user.learnedAt.has(value)) user.learnedAt.set(value, ++sightings);
}

function remember(user: SimUser, set: Set<string>, value: string): void {
  set.add(value);
  seen(user, value);
}

/** A record is the user's own when it names the user (a record of another user is a leak, not a value). */
function learnOwned(user: SimUser, set: Set<string>, records: readonly OwnedRecord[] | undefined): void {
  for (const record of records ?? []) {
    if (record.user_id === undefined || record.user_id === user.userId) remember(user, set, record.id);
  }
}

function learn(user: SimUser, body: TurnBody | null | undefined): void {
  learnOwned(user, user.taskIds, body?.tasks);
  learnOwned(user, user.actionIds, body?.actions);
  if (body?.run_id) remember(user, user.references, body.run_id);
  if (body?.checkpoint_id) remember(user, user.references, body.checkpoint_id);
  const reference = /[Rr]eference (\S+?)\.?$/.exec(body?.reply ?? '')?.[1];
  if (reference) {
    remember(user, user.references, reference);
    user.booked = true;
  }
}

function check(user: SimUser, exchange: Exchange, expected: number): boolean {
  user.exchanges.push(exchange);
  if (exchange.status === expected) return true;
  user.errors.push(
    `${exchange.method} ${exchange.path}: ${exchange.status || exchange.error} ${exchange.body.slice(0, 200)}`,
  );
  return false;
}

/** Mints the user's token and opens its session; false (with an error kept) when either fails. */
export async function openUser(target: Target, user: SimUser): Promise<boolean> {
  const minting = { user_id: user.userId, ttl_seconds: 3600 };
  const minted = await send(target.url, 'POST /v1/tokens', minting, (raw) =>
    raw.POST('/v1/tokens', { ...bearer(target.apiKey), body: minting }),
  );
  if (!check(user, minted.exchange, 201)) return false;
  user.token = minted.data?.token ?? '';
  const making = { agent: 'flight_booking' };
  const made = await send(target.url, 'POST /v1/sessions', making, (raw) =>
    raw.POST('/v1/sessions', { ...bearer(user.token), body: making }),
  );
  if (!check(user, made.exchange, 201)) return false;
  user.sessionId = made.data?.id ?? null;
  if (user.sessionId !== null) seen(user, user.sessionId);
  return user.sessionId !== null;
}

/** Think time with ±20% jitter, as a person (or a k6 script) would pause between turns. */
export function thinkTime(thinkMs: number): number {
  if (thinkMs <= 0) return 0;
  return Math.round(thinkMs * (0.8 + 0.4 * Math.random()));
}

export async function runTurns(
  target: Target,
  user: SimUser,
  thinkMs: number,
  onTurn?: (ms: number, ok: boolean) => void,
  /** Awaited before the first turn and after each turn (before the think time): a reading around each. */
  edge?: () => Promise<void>,
): Promise<void> {
  if (user.sessionId === null) return;
  await edge?.();
  for (const [i, input] of user.inputs.entries()) {
    if (i > 0 && thinkMs > 0) await sleep(thinkTime(thinkMs));
    const marker = textMarker();
    user.planted.push(marker);
    const startedAt = performance.now();
    const id = user.sessionId;
    const body = { input: withMarker(input, marker) };
    const { exchange: answer, data } = await send(target.url, 'POST /v1/sessions/{id}/turns', body, (raw) =>
      raw.POST('/v1/sessions/{id}/turns', { ...bearer(user.token), params: { path: { id } }, body }),
    );
    const ok = check(user, answer, 200);
    user.turns.push({ ms: answer.ms, startedAt, endedAt: startedAt + answer.ms });
    onTurn?.(answer.ms, ok);
    if (ok) learn(user, data as TurnBody | undefined);
    await edge?.();
  }
  const sessionId = user.sessionId;
  const listed = await send(target.url, 'GET /v1/tasks', undefined, (raw) =>
    raw.GET('/v1/tasks', { ...bearer(user.token), params: { query: { session_id: sessionId } } }),
  );
  if (check(user, listed.exchange, 200)) {
    learnOwned(user, user.taskIds, listed.data?.items as OwnedRecord[] | undefined);
  }
}
