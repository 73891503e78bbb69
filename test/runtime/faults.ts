/** A real store with one injected fault: the n-th commitTurn throws (before or after it is applied), like a process dying there. */
import type { StateStore } from '../../src/store/types.js';

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
