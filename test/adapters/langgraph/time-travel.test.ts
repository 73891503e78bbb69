/**
 * LangGraph's own time travel through `agentstate/langgraph` on every store: a thread forked from an earlier
 * checkpoint (`updateState` on its config, then `invoke(null, fork)`) runs on from there, the original run's
 * checkpoints stay in the thread's history, and the thread's latest state is the fork's.
 */
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentStateSaver } from '../../../src/adapters/langgraph/index.js';
import { freshScope, type OpenedStore, openTestStore, type StoreName } from '../stores.js';

const STORE_NAMES: StoreName[] = ['memory', 'sqlite', 'postgres', 'redis', 'tiered'];

const State = Annotation.Root({
  steps: Annotation<string[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }),
});

function graph(saver: AgentStateSaver) {
  return new StateGraph(State)
    .addNode('plan', () => ({ steps: ['plan'] }))
    .addNode('book', () => ({ steps: ['book'] }))
    .addEdge(START, 'plan')
    .addEdge('plan', 'book')
    .addEdge('book', END)
    .compile({ checkpointer: saver });
}

describe.each(STORE_NAMES)('LangGraph time travel on %s', (name) => {
  let opened: OpenedStore | null = null;
  beforeAll(async () => {
    if (name !== 'memory') opened = await openTestStore(name);
  }, 30_000);
  afterAll(async () => opened?.cleanup());

  it('forks a thread from an earlier checkpoint and keeps both branches in its history', async () => {
    const saver =
      opened === null
        ? await AgentStateSaver.open('memory:', freshScope())
        : new AgentStateSaver({ store: opened.store, ...freshScope() });
    const app = graph(saver);
    const config = { configurable: { thread_id: 'trip-1' } };
    expect((await app.invoke({ steps: ['ask'] }, config)).steps).toEqual(['ask', 'plan', 'book']);

    const history = [];
    for await (const snapshot of app.getStateHistory(config)) history.push(snapshot);
    const beforeBook = history.find((s) => s.next.length === 1 && s.next[0] === 'book');
    expect(beforeBook?.values.steps).toEqual(['ask', 'plan']);

    const fork = await app.updateState(beforeBook!.config, { steps: ['change: economy'] });
    expect(fork.configurable?.checkpoint_id).not.toBe(beforeBook!.config.configurable?.checkpoint_id);
    expect((await app.invoke(null, fork)).steps).toEqual(['ask', 'plan', 'change: economy', 'book']);

    expect((await app.getState(config)).values.steps).toEqual(['ask', 'plan', 'change: economy', 'book']);
    const after = [];
    for await (const snapshot of app.getStateHistory(config)) after.push(snapshot);
    const finals = after.filter((s) => s.next.length === 0).map((s) => s.values.steps);
    expect(finals).toEqual([
      ['ask', 'plan', 'change: economy', 'book'],
      ['ask', 'plan', 'book'],
    ]);
    // The original branch is still readable at its own checkpoint.
    const original = history[0]!;
    expect((await app.getState(original.config)).values.steps).toEqual(['ask', 'plan', 'book']);
    await saver.close();
  });
});
