/** A real store with one injected fault: the n-th commitTurn throws (before or after it is applied), like a process dying there. */
import type { StateStore, TurnBatch } from '../../src/store/types.js';

/**
 * The call a run makes, by what it does: a commitTurn that writes a checkpoint and its events alone is the
 * run's checkpoint-only commit (`putCheckpoint` when the run has no event log), named so here.
 */
export function callName(property: string | symbol, args: readonly unknown[]): string {
  if (property !== 'commitTurn') return String(property);
  const batch = args[1] as TurnBatch | undefined;
  const parts = Object.keys(batch ?? {}).filter((key) => key !== 'events');
  return parts.length === 1 && parts[0] === 'checkpoint' ? 'putCheckpoint' : 'commitTurn';
}

export class SimulatedCrash extends Error {}

export function crashingStore(
  store: StateStore,
  at: number,
  when: 'before' | 'after' = 'before',
): StateStore {
  let commits = 0;
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'commitTurn') {
        return async (...args: Parameters<StateStore['commitTurn']>) => {
          // A checkpoint alone is not one of the turn's commits.
          if (callName(prop, args) === 'putCheckpoint') return target.commitTurn(...args);
          commits++;
          if (commits === at && when === 'before')
            throw new SimulatedCrash(`simulated crash before commit ${at}`);
          const result = await target.commitTurn(...args);
          if (commits === at) throw new SimulatedCrash(`simulated crash after commit ${at}`);
          return result;
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/**
 * Like `crashingStore`, but the process is dead after the crash: every later call of the store throws too,
 * so nothing after the crash point is written (code that catches the crash cannot record anything).
 */
export function dyingStore(store: StateStore, at: number, when: 'before' | 'after' = 'before'): StateStore {
  const crashing = crashingStore(store, at, when);
  let dead = false;
  return new Proxy(crashing, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        if (dead) throw new SimulatedCrash(`the process died at commit ${at}`);
        try {
          return await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        } catch (error) {
          if (error instanceof SimulatedCrash) dead = true;
          throw error;
        }
      };
    },
  });
}
