/**
 * The leak check: a response to one user must contain no value that belongs to another user (user id,
 * token, passenger name, session, task and action ids, run and checkpoint ids, booking reference). The
 * whole body text is searched, so a value leaked in an error message or a nested field is found too.
 */
import type { Exchange } from './http.js';
import type { SimUser } from './user.js';

export type MarkerKind =
  | 'user_id'
  | 'token'
  | 'passenger_name'
  | 'session_id'
  | 'task_id'
  | 'action_id'
  | 'ref';

export interface Marker {
  readonly value: string;
  readonly kind: MarkerKind;
  /** The user the value belongs to. */
  readonly owner: string;
}

export interface Leak {
  /** The user who received the response. */
  readonly receiver: string;
  readonly owner: string;
  readonly kind: MarkerKind;
  readonly value: string;
  readonly request: string;
  readonly status: number;
}

export function markersOf(user: SimUser): Marker[] {
  const owner = user.userId;
  const out: Marker[] = [
    { value: user.userId, kind: 'user_id', owner },
    { value: user.passengerName, kind: 'passenger_name', owner },
  ];
  if (user.token) out.push({ value: user.token, kind: 'token', owner });
  if (user.sessionId) out.push({ value: user.sessionId, kind: 'session_id', owner });
  for (const value of user.taskIds) out.push({ value, kind: 'task_id', owner });
  for (const value of user.actionIds) out.push({ value, kind: 'action_id', owner });
  for (const value of user.references) out.push({ value, kind: 'ref', owner });
  return out;
}

/**
 * The values of other users found in one response to `receiver`. A value the receiver itself put in the
 * request (a probe's path: "session sess_x not found") is an echo, not a leak.
 */
export function leaksIn(receiver: string, exchange: Exchange, markers: readonly Marker[]): Leak[] {
  const found: Leak[] = [];
  const text = exchange.body;
  if (text.length === 0) return found;
  for (const marker of markers) {
    if (marker.owner === receiver || !text.includes(marker.value)) continue;
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

/** Every exchange of every user checked against the values of every other user. */
export function findLeaks(
  users: readonly SimUser[],
  extra: readonly { receiver: string; exchange: Exchange }[] = [],
): Leak[] {
  const markers = users.flatMap(markersOf);
  const leaks: Leak[] = [];
  for (const user of users) {
    for (const exchange of user.exchanges) leaks.push(...leaksIn(user.userId, exchange, markers));
  }
  for (const { receiver, exchange } of extra) leaks.push(...leaksIn(receiver, exchange, markers));
  return leaks;
}
