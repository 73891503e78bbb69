/**
 * What the framework adapters' durable models and tools share: one queue per durable context (the context
 * takes one call at a time, in the order the framework started them), and a model call whose provider
 * error is `upstream_unavailable`, so the run stays open to be continued (a plain error would end it
 * FAILED).
 */
import { AgentStateError, isAgentStateError } from '../../core/errors.js';
import type { DurableContext } from '../../durable/types.js';

export type Serial = <T>(work: () => Promise<T>) => Promise<T>;

function serial(): Serial {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(work: () => Promise<T>) => {
    const next = tail.then(work, work);
    tail = next.catch(() => undefined);
    return next;
  };
}

const queues = new WeakMap<DurableContext, Serial>();

/** The queue of `ctx`'s calls, made on first use. */
export function queueOf(ctx: DurableContext): Serial {
  let queue = queues.get(ctx);
  if (queue === undefined) {
    queue = serial();
    queues.set(ctx, queue);
  }
  return queue;
}

/** One model call; a provider's error becomes `upstream_unavailable`. */
export async function modelAnswer<M>(get: () => PromiseLike<M>): Promise<M> {
  try {
    return await get();
  } catch (error) {
    if (isAgentStateError(error)) throw error;
    const message = error instanceof Error ? error.message : String(error);
    throw new AgentStateError('upstream_unavailable', `the model did not answer: ${message}`, {
      cause: error,
    });
  }
}
