/**
 * A StateStore wrapper for the crash child: a kill point before and after every checkpointed commit (a step
 * boundary), and the time of the first write (how long a resumed run took to get going again).
 */
import type { StateStore } from '../../store/types.js';
import type { CrashPoints } from './points.js';

const COMMITS = new Set<PropertyKey>(['commitTurn', 'putCheckpoint']);
const WRITES = new Set<PropertyKey>([
  'commitTurn',
  'putCheckpoint',
  'createSession',
  'updateSession',
  'appendMessages',
  'createTask',
  'updateTask',
  'beginAction',
  'completeAction',
  'markActionUnknown',
  'resolveAction',
  'recordAttempt',
]);

export interface WatchedStore {
  readonly store: StateStore;
  /** performance.now() of the first write through this wrapper, or null. */
  firstWriteAt(): number | null;
}

/** `onFirstWrite` is called once, just before the first write goes to the store. */
export function watchStore(
  inner: StateStore,
  points: CrashPoints,
  onFirstWrite: () => void = () => {},
): WatchedStore {
  let commits = 0;
  let firstWrite: number | null = null;
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      const method = value as (...args: unknown[]) => Promise<unknown>;
      if (!WRITES.has(prop)) return method.bind(target);
      return async (...args: unknown[]) => {
        if (firstWrite === null) {
          firstWrite = performance.now();
          onFirstWrite();
        }
        if (!COMMITS.has(prop)) return method.apply(target, args);
        const n = ++commits;
        points.pass(`commit:${n}:before`);
        const result = await method.apply(target, args);
        points.pass(`commit:${n}:after`);
        return result;
      };
    },
  });
  return { store, firstWriteAt: () => firstWrite };
}
