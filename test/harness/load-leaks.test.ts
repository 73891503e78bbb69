/**
 * The leak check and the probes can fail: a response holding another user's passenger name (or token, or
 * task id, or the marker planted in the text of one of its turns) is counted and attributed to the user who
 * wrote it, an echo of what the receiver sent is not, and a server that answers another user's records (a
 * real HTTP server on loopback, leaky on purpose) fails every probe. The markers leave the rules model's
 * reading of every booking turn as it was.
 */
import { randomInt } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightBookingAgent } from '../../src/agents/index.js';
import {
  type Exchange,
  findLeaks,
  leaksIn,
  markersOf,
  newUser,
  planProbes,
  probeAll,
  type SimUser,
  textMarker,
  ValueIndex,
  withMarker,
} from '../../src/harness/load/index.js';
import { bookingInputs, type Phase, passengerName, randomLetters } from '../../src/harness/load/user.js';
import { createRulesModel } from '../../src/models/rules/index.js';
import { taskTypeInfo } from '../../src/runtime/task-type.js';

function fakeUser(tag: string, phase: Phase = 'load'): SimUser {
  const user = newUser(phase, 0, tag, 5);
  user.token = `token-${tag}-${Math.random().toString(36).slice(2)}`;
  user.sessionId = `sess_${tag}${Math.random().toString(36).slice(2)}`;
  user.taskIds.add(`task_${tag}${Math.random().toString(36).slice(2)}`);
  user.planted.push(textMarker(), textMarker());
  return user;
}

function answer(body: unknown, path = '/v1/sessions/x/turns', status = 200): Exchange {
  return { method: 'POST', path, sent: '{"input":"yes"}', status, body: JSON.stringify(body), ms: 1 };
}

describe('leak check', () => {
  const alice = fakeUser('alice');
  const bob = fakeUser('bob');
  const markers = [...markersOf(alice), ...markersOf(bob)];

  it("counts another user's passenger name anywhere in the body", () => {
    const leaked = answer({ reply: 'ok', tasks: [{ slots: { passenger_name: bob.passengerName } }] });
    alice.exchanges.push(leaked);
    const leaks = findLeaks([alice, bob]);
    expect(leaks).toHaveLength(1);
    expect(leaks[0]).toMatchObject({
      receiver: alice.userId,
      owner: bob.userId,
      kind: 'passenger_name',
      value: bob.passengerName,
    });
    alice.exchanges.pop();
  });

  it("counts another user's token, session, task id and user id, even inside an error message", () => {
    const body = {
      error: { code: 'x', message: `${bob.token} ${bob.sessionId} ${[...bob.taskIds][0]} ${bob.userId}` },
    };
    const kinds = leaksIn(alice.userId, answer(body, '/v1/tasks', 500), markers).map((l) => l.kind);
    expect(kinds.sort()).toEqual(['session_id', 'task_id', 'token', 'user_id']);
  });

  it("counts the marker another user planted in its text, as that writer's, though no id or name is near it", () => {
    // bob's words, shown to alice (in a message, a summary, anything): only bob's marker gives them away
    const leaked = answer({ items: [{ role: 'user', content: `yes (${bob.planted[1]})` }] }, '/v1/x', 200);
    const leaks = leaksIn(alice.userId, leaked, markers);
    expect(leaks).toEqual([
      {
        receiver: alice.userId,
        owner: bob.userId,
        kind: 'text',
        value: bob.planted[1],
        request: 'POST /v1/x',
        status: 200,
      },
    ]);
    // the same words in bob's own answer are no leak
    expect(leaksIn(bob.userId, leaked, markers)).toEqual([]);
  });

  it('a value two users hold belongs to the first who saw it, not to the one it was shown to later', () => {
    const carol = fakeUser('carol');
    const dave = fakeUser('dave');
    // carol's turn made the checkpoint; a leaky answer showed it to dave afterwards, who took it for his
    carol.references.add('ckpt_shared');
    carol.learnedAt.set('ckpt_shared', 1);
    dave.references.add('ckpt_shared');
    dave.learnedAt.set('ckpt_shared', 2);
    const withIt = answer({ checkpoint_id: 'ckpt_shared' });
    carol.exchanges.push(withIt);
    dave.exchanges.push(withIt);
    expect(findLeaks([carol, dave])).toMatchObject([
      { receiver: dave.userId, owner: carol.userId, kind: 'ref', value: 'ckpt_shared' },
    ]);
  });

  it("does not count the receiver's own values, nor an echo of an id it sent", () => {
    const own = answer({ reply: `Booked for ${alice.passengerName}`, session: { id: alice.sessionId } });
    expect(leaksIn(alice.userId, own, markers)).toEqual([]);
    const echo = answer(
      { error: { code: 'not_found', message: `session ${bob.sessionId} not found` } },
      `/v1/sessions/${bob.sessionId}`,
      404,
    );
    expect(leaksIn(alice.userId, echo, markers)).toEqual([]);
    // but the same 404 naming bob's passenger too is a leak
    const worse = answer(
      { error: { message: `session ${bob.sessionId} of ${bob.passengerName}` } },
      `/v1/sessions/${bob.sessionId}`,
      404,
    );
    expect(leaksIn(alice.userId, worse, markers).map((l) => l.kind)).toEqual(['passenger_name']);
  });
});

describe('probes against a leaky server', () => {
  let server: Server;
  let url: string;
  const users = [fakeUser('carol'), fakeUser('dave'), fakeUser('erin')];

  beforeAll(async () => {
    // answers every request with every user's session, whoever asks: what isolation must never do
    server = createServer((_request, response) => {
      response.setHeader('content-type', 'application/json');
      response.end(
        JSON.stringify({
          items: users.map((u) => ({ id: u.sessionId, passenger_name: u.passengerName })),
        }),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('every probe fails and every answer counts as leaks', async () => {
    const result = await probeAll({ url, apiKey: 'unused' }, users, 4);
    // 3 users x 2 others x (session list and task list by user, memory list and item; session, messages,
    // context, checkpoints, task list by session; task, task events, task actions, action list by task)
    expect(result.probes).toBe(3 * 2 * 13);
    expect(Object.keys(result.routes)).toHaveLength(13);
    expect(result.phases.load).toEqual({ probes: 78, failures: 78 });
    expect(result.failures).toHaveLength(result.probes);
    expect(result.failures[0]?.status).toBe(200);
    const leaks = findLeaks(users, result.exchanges);
    // every answer names both other users' passengers
    expect(leaks.filter((l) => l.kind === 'passenger_name')).toHaveLength(result.probes * 2);
  });
});

describe('values found in one pass', () => {
  it('finds exactly the values a plain search finds, short and long, at any place', () => {
    for (let round = 0; round < 50; round++) {
      const values = Array.from({ length: 40 }, (_, i) => ({ value: randomLetters(1 + (i % 14)) }));
      const text = Array.from({ length: 30 }, () =>
        randomInt(3) === 0 ? (values[randomInt(values.length)]?.value ?? '') : randomLetters(randomInt(9)),
      ).join(randomInt(2) === 0 ? '' : ' \u4e0a"');
      const index = new ValueIndex(values);
      const expected = new Set(values.filter((v) => text.includes(v.value)));
      expect(new Set(index.find(text))).toEqual(expected);
    }
  });
});

describe('probe plan', () => {
  it('probes every pair of the load phase, and each user of every phase from others, never itself', () => {
    const phases: Phase[] = ['warmup', 'back_to_back', 'baseline', 'load', 'saturation'];
    const everyone = phases.flatMap((phase) => [0, 1, 2].map((i) => fakeUser(`${phase}${i}`, phase)));
    const load = everyone.filter((u) => u.phase === 'load');
    const probes = planProbes({ everyPair: load, everyone, spread: 3 });
    const pairs = new Set(probes.map((p) => `${p.prober.userId} ${p.owner.userId}`));
    for (const a of load)
      for (const b of load) if (a !== b) expect(pairs.has(`${a.userId} ${b.userId}`)).toBe(true);
    expect(probes.some((p) => p.prober === p.owner)).toBe(false);
    for (const owner of everyone) {
      const probers = new Set(probes.filter((p) => p.owner === owner).map((p) => p.prober));
      expect(probers.size).toBeGreaterThanOrEqual(3);
      // some of them from another phase
      expect([...probers].some((p) => p.phase !== owner.phase)).toBe(true);
    }
    // 13 routes for an owner with one task and no action
    expect(probes.length).toBe(pairs.size * 13);
  });
});

describe('text markers', () => {
  const model = createRulesModel();
  const types = flightBookingAgent.taskTypes.map(taskTypeInfo);
  const expecting = [null, 'date', 'cabin_class', 'passenger_name', null];
  const extract = (input: string, slot: string | null) =>
    model.extract({
      input,
      taskTypes: types,
      expecting: slot === null ? null : { type: 'flight_booking', slot },
      now: new Date().toISOString(),
      timezone: 'UTC',
      language: 'en',
    });

  it('leave what the rules model reads from every booking turn as it was', async () => {
    for (let round = 0; round < 40; round++) {
      const inputs = bookingInputs(round, passengerName(), 7);
      for (const [i, input] of inputs.entries()) {
        const slot = expecting[i] ?? null;
        const marked = withMarker(input, textMarker());
        expect(await extract(marked, slot)).toEqual(await extract(input, slot));
      }
    }
  });
});
