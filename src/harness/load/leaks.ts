/**
 * The leak check: a response to one user must contain no value that belongs to another user (user id,
 * token, passenger name, the marker planted in the text of each of its turns, session, task and action
 * ids, run and checkpoint ids, booking reference). The whole body text is searched, so a value leaked in an
 * error message, a nested field or someone else's message text is found too. A value belongs to the user
 * who wrote it (or whose record it names), never to whoever saw it.
 */
import type { Exchange } from './http.js';
import type { SimUser } from './user.js';
import { ValueIndex } from './value-index.js';

export type MarkerKind =
  | 'user_id'
  | 'token'
  | 'passenger_name'
  | 'text'
  | 'session_id'
  | 'task_id'
  | 'action_id'
  | 'ref';

export const MARKER_KINDS: readonly MarkerKind[] = [
  'user_id',
  'token',
  'passenger_name',
  'text',
  'session_id',
  'task_id',
  'action_id',
  'ref',
];

export interface Marker {
  readonly value: string;
  readonly kind: MarkerKind;
  /** The user the value belongs to: who wrote it, or whose record it is. */
  readonly owner: string;
  /**
   * For a value learned from the server, when the owner first saw it (run-wide order); absent for a value
   * the user made itself. Of two users who both hold a value, the first to see it owns it.
   */
  readonly firstSeen?: number;
}

export interface Leak {
  /** The user who received the response. */
  readonly receiver: string;
  /** The user the value belongs to (who wrote it). */
  readonly owner: string;
  readonly kind: MarkerKind;
  readonly value: string;
  readonly request: string;
  readonly status: number;
}

export interface LeakScan {
  readonly leaks: Leak[];
  /** Responses searched. */
  readonly answers: number;
  /** Distinct values every response was searched for. */
  readonly values: number;
}

export function markersOf(user: SimUser): Marker[] {
  const owner = user.userId;
  const out: Marker[] = [
    { value: user.userId, kind: 'user_id', owner },
    { value: user.passengerName, kind: 'passenger_name', owner },
  ];
  if (user.token) out.push({ value: user.token, kind: 'token', owner });
  for (const value of user.planted) out.push({ value, kind: 'text', owner });
  const learned = (value: string, kind: MarkerKind): Marker => {
    const firstSeen = user.learnedAt.get(value);
    return firstSeen === undefined ? { value, kind, owner } : { value, kind, owner, firstSeen };
  };
  if (user.sessionId) out.push(learned(user.sessionId, 'session_id'));
  for (const value of user.taskIds) out.push(learned(value, 'task_id'));
  for (const value of user.actionIds) out.push(learned(value, 'action_id'));
  for (const value of user.references) out.push(learned(value, 'ref'));
  return out;
}

/** One owner per value: a value made by a user is theirs; a learned one is the first to see it's. */
export function ownedMarkers(markers: readonly Marker[]): Marker[] {
  const byValue = new Map<string, Marker>();
  const rank = (m: Marker) => m.firstSeen ?? 0;
  for (const marker of markers) {
    const held = byValue.get(marker.value);
    if (held === undefined || rank(marker) < rank(held)) byValue.set(marker.value, marker);
  }
  return [...byValue.values()];
}

function leaksWith(receiver: string, exchange: Exchange, index: ValueIndex<Marker>): Leak[] {
  const text = exchange.body;
  if (text.length === 0) return [];
  const found: Leak[] = [];
  for (const marker of index.find(text)) {
    if (marker.owner === receiver) continue;
    if (exchange.path.includes(marker.value) || exchange.sent.includes(marker.value)) continue;
    found.push({
      receiver,
      owner: marker.owner,
      kind: marker.kind,
      value: marker.value,
      request: `${exchange.method} ${exchange.path}`,
      status: exchange.status,
    });
  }
  return found;
}

/**
 * The values of other users found in one response to `receiver`. A value the receiver itself put in the
 * request (a probe's path: "session sess_x not found") is an echo, not a leak.
 */
export function leaksIn(receiver: string, exchange: Exchange, markers: readonly Marker[]): Leak[] {
  return leaksWith(receiver, exchange, new ValueIndex(ownedMarkers(markers)));
}

/** Every exchange of every user (and the extra ones, such as probes) searched for every other user's values. */
export function scanLeaks(
  users: readonly SimUser[],
  extra: readonly { receiver: string; exchange: Exchange }[] = [],
): LeakScan {
  const index = new ValueIndex(ownedMarkers(users.flatMap(markersOf)));
  const leaks: Leak[] = [];
  let answers = 0;
  for (const user of users) {
    for (const exchange of user.exchanges) {
      answers++;
      leaks.push(...leaksWith(user.userId, exchange, index));
    }
  }
  for (const { receiver, exchange } of extra) {
    answers++;
    leaks.push(...leaksWith(receiver, exchange, index));
  }
  return { leaks, answers, values: index.size };
}

export function findLeaks(
  users: readonly SimUser[],
  extra: readonly { receiver: string; exchange: Exchange }[] = [],
): Leak[] {
  return scanLeaks(users, extra).leaks;
}

/** How many leaks of each kind (every kind listed, 0 included). */
export function leaksByKind(leaks: readonly Leak[]): Record<MarkerKind, number> {
  const counts = Object.fromEntries(MARKER_KINDS.map((kind) => [kind, 0])) as Record<MarkerKind, number>;
  for (const leak of leaks) counts[leak.kind]++;
  return counts;
}
