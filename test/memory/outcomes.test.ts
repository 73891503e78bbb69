import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildContext } from '../../src/context/build.js';
import { proposalsAsSlots, proposedSlots, rememberTaskOutcome } from '../../src/memory/outcomes.js';
import { userMemory } from '../../src/memory/user-memory.js';
import type { StateStore } from '../../src/store/types.js';
import { appendAll, chatTurns, driveTask, freshScope, STORES } from '../context/stores.js';

describe.each(STORES)('task outcomes and proposals on $name', (kind) => {
  let store: StateStore;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    ({ store, cleanup } = await kind.open());
  });
  afterAll(async () => cleanup?.());

  async function booking(
    scope: ReturnType<typeof freshScope>,
    slots: Record<string, string>,
    sessionId?: string,
  ) {
    const task = await store.createTask(scope, {
      type: 'flight_booking',
      session_id: sessionId ?? null,
      slots,
    });
    return task;
  }

  it('remembers cabin class and passenger name when a flight_booking is DONE, and only then', async () => {
    const scope = freshScope();
    const task = await booking(scope, {
      origin: 'PEK',
      destination: 'NRT',
      cabin_class: 'business',
      passenger_name: 'Li Lei',
    });
    const executing = await driveTask(store, scope, task, 'EXECUTING');
    expect(await rememberTaskOutcome(store, executing)).toEqual([]);
    expect(await userMemory(store, scope).all('preferences')).toEqual([]);
    const done = await driveTask(store, scope, executing, 'DONE');
    const written = await rememberTaskOutcome(store, done);
    expect(written.map((i) => [i.key, i.value])).toEqual([
      ['flight_booking.cabin_class', 'business'],
      ['flight_booking.passenger_name', 'Li Lei'],
    ]);
    // the origin and destination are not preferences
    expect((await userMemory(store, scope).all('preferences')).map((i) => i.key)).toHaveLength(2);
    // remembering again writes nothing new
    expect(await rememberTaskOutcome(store, done)).toEqual([]);
  });

  it('reads slot aliases, ignores other task types, and writes to the task’s own user', async () => {
    const scope = freshScope();
    const task = await driveTask(store, scope, await booking(scope, { cabin: 'first' }), 'DONE');
    expect((await rememberTaskOutcome(store, task)).map((i) => [i.key, i.value, i.user_id])).toEqual([
      ['flight_booking.cabin_class', 'first', scope.user_id],
    ]);
    const other = await store.createTask(scope, { type: 'deploy_pipeline', slots: { cabin_class: 'x' } });
    expect(await rememberTaskOutcome(store, await driveTask(store, scope, other, 'DONE'))).toEqual([]);
  });

  it('proposes the remembered values for slots not yet filled, with a question, to that user only', async () => {
    const scope = freshScope();
    const done = await driveTask(
      store,
      scope,
      await booking(scope, { cabin_class: 'business', passenger_name: 'Li Lei' }),
      'DONE',
    );
    await rememberTaskOutcome(store, done);
    const proposals = await proposedSlots(store, scope, 'flight_booking');
    expect(proposals).toEqual([
      {
        slot: 'cabin_class',
        value: 'business',
        key: 'flight_booking.cabin_class',
        question: 'business class again?',
      },
      {
        slot: 'passenger_name',
        value: 'Li Lei',
        key: 'flight_booking.passenger_name',
        question: 'Book for Li Lei again?',
      },
    ]);
    expect(proposalsAsSlots(proposals)).toEqual({ cabin_class: 'business', passenger_name: 'Li Lei' });
    const partly = await proposedSlots(store, scope, 'flight_booking', {
      filled: { passenger_name: 'Han Meimei' },
    });
    expect(partly.map((p) => p.slot)).toEqual(['cabin_class']);
    expect(await proposedSlots(store, scope, 'deploy_pipeline')).toEqual([]);
    const stranger = { tenant_id: scope.tenant_id, user_id: `${scope.user_id}_other` };
    expect(await proposedSlots(store, stranger, 'flight_booking')).toEqual([]);
  });

  it('end to end: a second session of the same user sees what the first one taught', async () => {
    const scope = freshScope();
    // session 1: the user books business class for Li Lei
    const first = await store.createSession(scope, { agent: 'flight_booking' });
    await appendAll(store, scope, first.id, [
      {
        role: 'user',
        content: 'Book me a flight from Beijing to Tokyo on 3 May, business class, for Li Lei.',
      },
      { role: 'assistant', content: 'Booked: confirmation ZX12Q.' },
    ]);
    const task = await booking(
      scope,
      {
        origin: 'PEK',
        destination: 'NRT',
        date: '2026-05-03',
        cabin_class: 'business',
        passenger_name: 'Li Lei',
      },
      first.id,
    );
    await rememberTaskOutcome(store, await driveTask(store, scope, task, 'DONE'));
    await store.endSession(scope, first.id);

    // session 2: a new trip; nothing of session 1's chat is in it
    const second = await store.createSession(scope, { agent: 'flight_booking' });
    await appendAll(store, scope, second.id, chatTurns(1));
    const proposals = await proposedSlots(store, scope, 'flight_booking');
    const next = await store.createTask(scope, {
      type: 'flight_booking',
      session_id: second.id,
      state: 'COLLECTING',
      slots: { origin: 'PEK', destination: null },
      data: { proposed_slots: proposalsAsSlots(proposals), next_step: proposals[0]!.question },
    });
    const ctx = await buildContext({ store, scope, sessionId: second.id, maxTokens: 2000 });
    expect(ctx.system).toContain('- preferences.flight_booking.cabin_class: business');
    expect(ctx.system).toContain('- preferences.flight_booking.passenger_name: Li Lei');
    expect(ctx.system).toContain(`Task flight_booking (${next.id}): state COLLECTING`);
    expect(ctx.system).toContain('Next step: business class again?');
    expect(ctx.system).not.toContain('ZX12Q');
    expect(ctx.messages.every((m) => !m.content.includes('Li Lei'))).toBe(true);
    expect(ctx.included.memory).toEqual(
      expect.arrayContaining([
        { namespace: 'preferences', key: 'flight_booking.cabin_class' },
        { namespace: 'preferences', key: 'flight_booking.passenger_name' },
      ]),
    );

    // another user of the same tenant starts fresh
    const stranger = { tenant_id: scope.tenant_id, user_id: `${scope.user_id}_other` };
    const theirs = await store.createSession(stranger, { agent: 'flight_booking' });
    const ctxB = await buildContext({ store, scope: stranger, sessionId: theirs.id, maxTokens: 2000 });
    expect(ctxB.system).not.toContain('business');
    expect(ctxB.system).not.toContain('Li Lei');
    expect(ctxB.included.memory).toEqual([]);
  });
});
