/**
 * Where the window reads messages from, newest first, one page at a time. The store source reads only the
 * pages it is asked for (`lastMessages` for the newest page, `listMessages` by seq range for older ones),
 * so the cost of a window depends on the window, not on the length of the history.
 */
import type { Message } from '../core/model.js';
import type { ReadScope, StateStore } from '../store/types.js';

export interface MessageSource {
  /**
   * Up to `limit` of the newest messages with `floor < seq < before` (`before` null: no upper bound), in
   * ascending seq order. Fewer than `limit` means there is nothing older above the floor.
   */
  older(before: number | null, limit: number, floor: number): Promise<Message[]>;
}

/** Reads a session's messages from a store, page by page (limit at most 1000, as the contract allows). */
export function storeMessageSource(store: StateStore, scope: ReadScope, sessionId: string): MessageSource {
  return {
    async older(before, limit, floor) {
      if (before === null) {
        const last = await store.lastMessages(scope, sessionId, limit);
        return last.filter((m) => m.seq > floor);
      }
      const from = Math.max(floor, before - 1 - limit);
      const count = before - 1 - from;
      if (count <= 0) return [];
      return store.listMessages(scope, sessionId, { after_seq: from, limit: count });
    },
  };
}

/** The same reads over an array already in memory (ascending seq), for tests and for callers that hold the history. */
export function arrayMessageSource(messages: readonly Message[]): MessageSource {
  return {
    async older(before, limit, floor) {
      const eligible = messages.filter((m) => m.seq > floor && (before === null || m.seq < before));
      return eligible.slice(Math.max(0, eligible.length - limit));
    },
  };
}
