/**
 * AgentStateSaver's values are the caller's own: the saver keeps no reference to a value it was given or
 * handed out (a reducer that changes its array in place changes no stored checkpoint, one tuple of a list
 * shares nothing with another), an unchanged channel is carried from the parent, and what a saver wrote
 * through the serializer's own calls reads back the same through the default serializer's short cut.
 */
import { HumanMessage } from '@langchain/core/messages';
import type { RunnableConfig } from '@langchain/core/runnables';
import {
  type ChannelVersions,
  type Checkpoint,
  emptyCheckpoint,
  JsonPlusSerializer,
  uuid6,
} from '@langchain/langgraph-checkpoint';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentStateSaver } from '../../../src/adapters/langgraph/index.js';
import { freshScope, type OpenedStore, openTestStore, type StoreName } from '../stores.js';

type Values = Record<string, unknown>;

function checkpointOf(step: number, values: Values, versions: ChannelVersions): Checkpoint {
  return { ...emptyCheckpoint(), id: uuid6(step), channel_values: values, channel_versions: versions };
}

async function put(
  saver: AgentStateSaver,
  config: RunnableConfig,
  step: number,
  values: Values,
  versions: ChannelVersions,
  newVersions: ChannelVersions,
): Promise<RunnableConfig> {
  const metadata = { source: 'loop' as const, step, parents: {} };
  return saver.put(config, checkpointOf(step, values, versions), metadata, newVersions);
}

/** A serializer that writes as the default one but is not it: the saver calls it, as before the short cut. */
class SameFormat extends JsonPlusSerializer {}

describe.each<StoreName>(['memory', 'sqlite', 'postgres'])('AgentStateSaver values over %s', (name) => {
  let opened: OpenedStore;
  beforeAll(async () => {
    opened = await openTestStore(name);
  });
  afterAll(() => opened?.cleanup());

  const saverOf = (serde?: JsonPlusSerializer) =>
    new AgentStateSaver({ store: opened.store, ...freshScope(), ...(serde ? { serde } : {}) });

  it('keeps no reference to a value it was given or handed out', async () => {
    const saver = saverOf();
    const root: RunnableConfig = { configurable: { thread_id: 'mutations', checkpoint_ns: '' } };
    const messages = [{ role: 'user', content: 'one' }];
    let config = await put(saver, root, 0, { messages }, { messages: 1 }, { messages: 1 });
    messages.push({ role: 'assistant', content: 'two' }); // a reducer that appends in place
    config = await put(saver, config, 1, { messages }, { messages: 2 }, { messages: 2 });

    const history = [];
    for await (const tuple of saver.list(root)) history.push(tuple);
    expect(history.map((t) => (t.checkpoint.channel_values.messages as unknown[]).length)).toEqual([2, 1]);
    const [newest, oldest] = history.map((t) => t.checkpoint.channel_values.messages as Values[]);
    expect(newest?.[0]).not.toBe(oldest?.[0]);
    (newest?.[0] as Values).content = 'changed';
    expect(oldest?.[0]?.content).toBe('one');

    const latest = await saver.getTuple(root);
    if (latest === undefined) throw new Error('no checkpoint');
    (latest.checkpoint.channel_values.messages as Values[]).push({ role: 'user', content: 'three' });
    const again = await saver.getTuple(root);
    expect(again?.checkpoint.channel_values.messages).toEqual(messages);
  });

  it('carries an unchanged channel from the parent, from its own value when it has one', async () => {
    const saver = saverOf();
    const root: RunnableConfig = { configurable: { thread_id: 'carry', checkpoint_ns: '' } };
    let config = await put(saver, root, 0, { a: 'first', b: 1 }, { a: 1, b: 1 }, { a: 1, b: 1 });
    config = await put(saver, config, 1, { b: 2 }, { a: 1, b: 2 }, { b: 2 }); // `a` not given: the parent's
    expect((await saver.getTuple(config))?.checkpoint.channel_values).toEqual({ a: 'first', b: 2 });
    // A fresh saver (nothing remembered) reads the parent for it.
    const fresh = new AgentStateSaver({ store: opened.store, ...saver.scope });
    config = await put(fresh, config, 2, { b: 3 }, { a: 1, b: 3 }, { b: 3 });
    expect((await fresh.getTuple(config))?.checkpoint.channel_values).toEqual({ a: 'first', b: 3 });
    // A channel whose version differs from the parent's and is not new is not carried.
    config = await put(fresh, config, 3, { a: 'x', b: 3 }, { a: 9, b: 3 }, {});
    expect((await fresh.getTuple(config))?.checkpoint.channel_values).toEqual({ b: 3 });
  });

  it('stores what only the store refuses through the serializer', async () => {
    const saver = saverOf();
    class List extends Array<number> {}
    const odd = { [Symbol('s')]: 1, '\ud800key': 2, list: List.from([1, 2]), text: 'a\udc00' };
    const versions = { odd: 1, plain: 1 };
    const config = await put(
      saver,
      { configurable: { thread_id: 'odd' } },
      0,
      { odd, plain: [1] },
      versions,
      versions,
    );
    const [type, bytes] = await new JsonPlusSerializer().dumpsTyped(odd);
    const expected = await new JsonPlusSerializer().loadsTyped(type, bytes);
    expect((await saver.getTuple(config))?.checkpoint.channel_values).toEqual({ odd: expected, plain: [1] });
  });

  it('reads what the serializer wrote, and the other way round', async () => {
    const scope = freshScope();
    const slow = new AgentStateSaver({ store: opened.store, ...scope, serde: new SameFormat() });
    const fast = new AgentStateSaver({ store: opened.store, ...scope });
    const values = {
      messages: [new HumanMessage({ content: 'hi', id: 'h1' })],
      plain: { a: [1, 2, { b: null }] },
      odd: { gone: undefined, set: new Set([1]) },
    };
    const versions = { messages: 1, plain: 1, odd: 1 };
    for (const [writer, reader] of [
      [slow, fast],
      [fast, slow],
    ] as const) {
      const thread = `compat-${writer === slow ? 'slow' : 'fast'}`;
      const config = await put(
        writer,
        { configurable: { thread_id: thread } },
        0,
        values,
        versions,
        versions,
      );
      await writer.putWrites(config, [['messages', [new HumanMessage('pending')]]], 'task-1');
      const a = await reader.getTuple(config);
      const b = await writer.getTuple(config);
      if (a === undefined || b === undefined) throw new Error('no checkpoint');
      expect(a.checkpoint).toEqual(b.checkpoint);
      expect(a.pendingWrites).toEqual(b.pendingWrites);
      expect((a.checkpoint.channel_values.messages as unknown[])[0]).toBeInstanceOf(HumanMessage);
      expect(a.checkpoint.channel_values.odd).toEqual({ gone: undefined, set: new Set([1]) });
    }
  });
});
