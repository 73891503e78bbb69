/**
 * The leak check and the probes can fail: a response holding another user's passenger name (or token, or
 * task id) is counted, an echo of what the receiver sent is not, and a server that answers another user's
 * records (a real HTTP server on loopback, leaky on purpose) fails every probe.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Exchange,
  findLeaks,
  leaksIn,
  markersOf,
  newUser,
  probeAll,
  type SimUser,
} from '../../src/harness/load/index.js';

function fakeUser(tag: string): SimUser {
  const user = newUser('load', 0, tag, 5);
  user.token = `token-${tag}-${Math.random().toString(36).slice(2)}`;
  user.sessionId = `sess_${tag}${Math.random().toString(36).slice(2)}`;
  user.taskIds.add(`task_${tag}${Math.random().toString(36).slice(2)}`);
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
    // 3 users x 2 others x (session, messages, context, task, task events, task list)
    expect(result.probes).toBe(3 * 2 * 6);
    expect(result.failures).toHaveLength(result.probes);
    expect(result.failures[0]?.status).toBe(200);
    const leaks = findLeaks(users, result.exchanges);
    // every answer names both other users' passengers
    expect(leaks.filter((l) => l.kind === 'passenger_name')).toHaveLength(result.probes * 2);
  });
});
