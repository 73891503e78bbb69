/**
 * Which cross-user probes a run sends: every route that takes another user's id (a session, a task, an
 * action) or names another user, asked with the prober's own token, and what each must answer. Every
 * pair of users of the (first) load phase probes each other; besides, every user of every phase is probed
 * by a few others spread over the whole run, so users of other phases (and other times) are asked too.
 */
import type { SimUser } from './user.js';

/**
 * `not_found`: 404. `empty`: 200 with an empty `items` list (a list filtered by another user's session or
 * task). `refused`: 400, as documented for a `user_id` in a query that differs from the token's user.
 */
export type ProbeExpect = 'not_found' | 'empty' | 'refused';

export interface Probe {
  readonly prober: SimUser;
  readonly owner: SimUser;
  /** The route's pattern, for counting: `GET /v1/tasks/:id/actions`. */
  readonly route: string;
  readonly path: string;
  readonly expect: ProbeExpect;
}

/** The preference key the flight booking remembers for its user once it is done. */
export const MEMORY_NAMESPACE = 'preferences';
export const MEMORY_KEY = 'flight_booking.passenger_name';

type Route = Pick<Probe, 'route' | 'path' | 'expect'>;

/** Every probe of one owner's records (its session, tasks, actions, memory and lists filtered by it). */
export function routesOf(owner: SimUser): Route[] {
  const user = encodeURIComponent(owner.userId);
  const out: Route[] = [
    { route: 'GET /v1/sessions?user_id', path: `/v1/sessions?user_id=${user}`, expect: 'refused' },
    { route: 'GET /v1/tasks?user_id', path: `/v1/tasks?user_id=${user}`, expect: 'refused' },
    {
      route: 'GET /v1/users/:user/memory/:namespace',
      path: `/v1/users/${user}/memory/${MEMORY_NAMESPACE}`,
      expect: 'not_found',
    },
    {
      route: 'GET /v1/users/:user/memory/:namespace/:key',
      path: `/v1/users/${user}/memory/${MEMORY_NAMESPACE}/${MEMORY_KEY}`,
      expect: 'not_found',
    },
  ];
  const sid = owner.sessionId;
  if (sid !== null) {
    out.push(
      { route: 'GET /v1/sessions/:id', path: `/v1/sessions/${sid}`, expect: 'not_found' },
      { route: 'GET /v1/sessions/:id/messages', path: `/v1/sessions/${sid}/messages`, expect: 'not_found' },
      { route: 'GET /v1/sessions/:id/context', path: `/v1/sessions/${sid}/context`, expect: 'not_found' },
      {
        route: 'GET /v1/sessions/:id/checkpoints',
        path: `/v1/sessions/${sid}/checkpoints`,
        expect: 'not_found',
      },
      { route: 'GET /v1/tasks?session_id', path: `/v1/tasks?session_id=${sid}`, expect: 'empty' },
    );
  }
  for (const tid of owner.taskIds) {
    out.push(
      { route: 'GET /v1/tasks/:id', path: `/v1/tasks/${tid}`, expect: 'not_found' },
      { route: 'GET /v1/tasks/:id/events', path: `/v1/tasks/${tid}/events`, expect: 'not_found' },
      { route: 'GET /v1/tasks/:id/actions', path: `/v1/tasks/${tid}/actions`, expect: 'not_found' },
      { route: 'GET /v1/actions?task_id', path: `/v1/actions?task_id=${tid}`, expect: 'empty' },
    );
  }
  for (const aid of owner.actionIds) {
    out.push({ route: 'GET /v1/actions/:id', path: `/v1/actions/${aid}`, expect: 'not_found' });
  }
  return out;
}

export interface ProbePlanInput {
  /** Users who probe every other one of them (the first load phase). */
  readonly everyPair: readonly SimUser[];
  /** Every user of the run, in the order of its phases. */
  readonly everyone: readonly SimUser[];
  /** How many other users, spread over `everyone`, probe each user of it. */
  readonly spread: number;
}

/** The (prober, owner) pairs: every pair of `everyPair`, then `spread` probers for each of `everyone`. */
export function probePairs(input: ProbePlanInput): [SimUser, SimUser][] {
  const pairs: [SimUser, SimUser][] = [];
  const taken = new Set<string>();
  const add = (prober: SimUser | undefined, owner: SimUser) => {
    if (prober === undefined || prober === owner || !prober.token) return;
    const key = `${prober.userId}\u0000${owner.userId}`;
    if (taken.has(key)) return;
    taken.add(key);
    pairs.push([prober, owner]);
  };
  for (const owner of input.everyPair) for (const prober of input.everyPair) add(prober, owner);
  const n = input.everyone.length;
  const spread = Math.min(Math.max(0, Math.floor(input.spread)), n - 1);
  // Probers of user i at i + step, i + 2 step, ...: a step of about n / (spread + 1) reaches other phases.
  const step = Math.max(1, Math.floor(n / (spread + 1)));
  for (const [i, owner] of input.everyone.entries()) {
    for (let j = 1; j <= spread; j++) add(input.everyone[(i + j * step) % n], owner);
  }
  return pairs;
}

export function planProbes(input: ProbePlanInput): Probe[] {
  return probePairs(input).flatMap(([prober, owner]) =>
    routesOf(owner).map((route) => ({ prober, owner, ...route })),
  );
}
