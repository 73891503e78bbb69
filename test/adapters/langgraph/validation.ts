/**
 * LangGraph's own checkpointer conformance suite (@langchain/langgraph-checkpoint-validation) run against
 * AgentStateSaver over one store kind. The suite calls vitest's globals; its CLI runs no test in 1.1.1, so we
 * hand it the globals and call its exported `validate` and the opt-in delta-channel tests ourselves. Every
 * checkpointer gets a fresh tenant and user, so suites never see each other's threads.
 */
import {
  deltaChannelHistoryTests,
  type CheckpointSaverTestInitializer as Initializer,
  validate,
} from '@langchain/langgraph-checkpoint-validation';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AgentStateSaver } from '../../../src/adapters/langgraph/index.js';
import { freshScope, type OpenedStore, openTestStore, type StoreName } from '../stores.js';

Object.assign(globalThis, { describe, it, test: it, expect, beforeAll, afterAll, beforeEach, afterEach });

/** Not one of the names the suite skips tests for, so "only changed channels are stored" runs too. */
export const CHECKPOINTER_NAME = 'agentstate';

export function validateOver(name: StoreName): void {
  let opened: OpenedStore | null = null;
  const initializer: Initializer<AgentStateSaver> = {
    checkpointerName: CHECKPOINTER_NAME,
    beforeAllTimeout: 30_000,
    async beforeAll() {
      if (name !== 'memory') opened = await openTestStore(name);
    },
    async afterAll() {
      await opened?.cleanup();
    },
    async createCheckpointer() {
      if (name === 'memory') return AgentStateSaver.open('memory:', freshScope());
      if (opened === null) throw new Error('store not open');
      return new AgentStateSaver({ store: opened.store, ...freshScope() });
    },
    async destroyCheckpointer(saver) {
      await saver.close();
    },
  };
  validate(initializer);
  describe(CHECKPOINTER_NAME, () => deltaChannelHistoryTests(initializer));
}
