/**
 * A StateStore wrapper for the crash child: a kill point before and after every write (a step boundary:
 * checkpointed commits, and any other write a runtime makes, so a run that splits what must be one commit
 * can be killed between the parts), and the time of the first write (how long a resumed run took to get
 * going again).
 */
import type { StateStore } from '../../store/types.js';
import type { CrashPoints } from './points.js';

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
  'putMemory',
  'deleteMemory',
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
  let writes = 0;
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
        const n = ++writes;
        points.pass(`commit:${n}:${String(prop)}:before`);
        const result = await method.apply(target, args);
        points.pass(`commit:${n}:${String(prop)}:after`);
        return result;
      };
    },
  });
  return { store, firstWriteAt: () => firstWrite };
}
