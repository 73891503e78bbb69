/**
 * Idempotency-Key claims tied to a live holder: a request's key is marked in progress for
 * IN_PROGRESS_TTL_SECONDS only, and renewed by the server while it runs (a slow turn, a streamed or
 * hijacked answer, a request whose client left), so a retry meanwhile gets 409; a claim nobody renews (its
 * server died) lapses after IN_PROGRESS_TTL_SECONDS and a retry then runs the request. A renewal that finds
 * the key gone is logged and not repeated, and that request then records nothing. No claim is renewed once
 * its request has ended.
 *
 * The store runs on a ManualClock, so "past the in-progress TTL" is a clock step; the renewals are real
 * timers (every third of the TTL), which the tests wait for.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Readable, Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { newId } from '../../src/core/ids.js';
import { createAuthenticator } from '../../src/http/auth.js';
import type { ZodApp } from '../../src/http/deps.js';
import { IN_PROGRESS_TTL_SECONDS, requestHash } from '../../src/http/idempotency.js';
import { createServer } from '../../src/http/server.js';
import { resolveConfig } from '../../src/server/config.js';
import type { TurnResponse, TurnRunner } from '../../src/server/turn-runner.js';
import { openStore } from '../../src/store/open.js';
import type { Scope, StateStore } from '../../src/store/types.js';
import { call, rand } from './harness.js';

const TTL_MS = IN_PROGRESS_TTL_SECONDS * 1000;
/** Longer than one renewal period (a third of the TTL). */
const RENEW_WAIT_MS = Math.ceil(TTL_MS / 3) + 2_000;

interface Gate {
  readonly entered: Promise<void>;
  enter(): void;
  readonly opened: Promise<void>;
  open(): void;
}

function gate(): Gate {
  let enter = () => {};
  let open = () => {};
  const entered = new Promise<void>((resolve) => {
    enter = resolve;
  });
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { entered, enter, opened, open };
}

/** What the handlers of this file wait on, by turn input or test route body. */
const gates = new Map<string, Gate>();
const runs: string[] = [];
const failOnce = new Set<string>();

async function passGate(name: string): Promise<void> {
  const g = gates.get(name);
  if (g === undefined) return;
  g.enter();
  await g.opened;
}

const turns: TurnRunner = {
  async runTurn(_scope, _session, input): Promise<TurnResponse> {
    runs.push(input);
    await passGate(input);
    if (failOnce.delete(input)) throw new Error('the turn failed');
    return { reply: `done: ${input}`, session: null, tasks: [], actions: [], checkpoint_id: null };
  },
  async resume(): Promise<TurnResponse> {
    throw new Error('not used');
  },
  async checkpoints() {
    return { items: [], next_cursor: null };
  },
};

const clock = new ManualClock(Date.now());
let base: StateStore;
/** Every renewRequestKey the server made: its key and its answer. */
const renewals: { key: string; ok: boolean }[] = [];
const logged: { level: number; msg: string; idempotencyKey?: string }[] = [];
let app: ZodApp;
let url = '';
let token = '';
let scope: Scope;

/** The store, with every renewal noted. */
function watched(store: StateStore): StateStore {
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'renewRequestKey') {
        return async (...args: Parameters<StateStore['renewRequestKey']>) => {
          const ok = await target.renewRequestKey(...args);
          renewals.push({ key: args[1], ok });
          return ok;
        };
      }
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

beforeAll(async () => {
  base = await openStore('memory:', { clock });
  const tenant = rand('t');
  const apiKey = rand('key-0123456789-');
  const config = resolveConfig({ apiKeys: { [apiKey]: tenant }, jwtSecret: randomBytes(32).toString('hex') });
  const logs = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line !== '') logged.push(JSON.parse(line));
      done();
    },
  });
  app = await createServer({
    store: watched(base),
    config,
    turns,
    logger: pino({ level: 'warn' }, logs),
  });
  // A streamed answer (as Server-Sent Events will be), and one the handler writes itself (hijacked).
  app.post('/v1/test/stream', async (request, reply) => {
    const name = (request.body as { name: string }).name;
    async function* events() {
      yield 'event: start\ndata: {}\n\n';
      await passGate(name);
      yield 'event: end\ndata: {}\n\n';
    }
    return reply.type('text/event-stream').send(Readable.from(events()));
  });
  app.post('/v1/test/hijack', async (request, reply) => {
    const name = (request.body as { name: string }).name;
    reply.hijack();
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream' });
    reply.raw.write('event: start\ndata: {}\n\n');
    await passGate(name);
    reply.raw.end('event: end\ndata: {}\n\n');
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const user = rand('u');
  scope = { tenant_id: tenant, user_id: user };
  token = (await createAuthenticator(config).mintUserToken(tenant, user, 3600)).token;
});

afterAll(async () => {
  await app?.close();
  await base?.close();
});

async function until(what: string, done: () => boolean, ms = RENEW_WAIT_MS): Promise<void> {
  const end = Date.now() + ms;
  while (!done()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Waits until the handler waits at `g`; fails at once if the request was answered before it got there. */
async function reached(g: Gate, request: Promise<unknown>): Promise<void> {
  const early = request.then((answer) => {
    throw new Error(`answered before reaching the handler: ${JSON.stringify(answer)}`);
  });
  early.catch(() => {});
  await Promise.race([g.entered, early]);
}

const renewalsOf = (key: string) => renewals.filter((r) => r.key === key);

/** Waits for the server's next renewal of `key`; answers what it answered. */
async function nextRenewal(key: string): Promise<boolean> {
  const before = renewalsOf(key).length;
  await until(`a renewal of ${key}`, () => renewalsOf(key).length > before);
  return renewalsOf(key)[before]?.ok as boolean;
}

const post = (path: string, body: unknown, key: string, signal?: AbortSignal) =>
  fetch(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });

const turnPath = () => `/v1/sessions/${newId('session')}/turns`;
const turn = (path: string, input: string, key: string) =>
  call<TurnResponse>(url, 'POST', path, { token, body: { input }, headers: { 'idempotency-key': key } });

/** Keeps the key's request running past its first in-progress TTL: a retry then still gets 409. */
async function outlivesFirstTtl(key: string, retry: () => Promise<{ status: number; text: string }>) {
  clock.advance(TTL_MS - 2_000);
  expect(await nextRenewal(key)).toBe(true);
  clock.advance(5_000); // past the claim's first expiry, within the renewed one
  const meanwhile = await retry();
  expect(meanwhile.status).toBe(409);
  expect(meanwhile.text).toContain('still in progress');
}

describe('Idempotency-Key claims are renewed by their holder', { timeout: 30_000 }, () => {
  it('a slow turn keeps its key in progress past the in-progress TTL; its answer is then replayed', async () => {
    const key = rand('idem-');
    const input = rand('slow-');
    const path = turnPath();
    const g = gate();
    gates.set(input, g);
    const first = turn(path, input, key);
    await reached(g, first);
    await outlivesFirstTtl(key, () => turn(path, input, key));
    g.open();
    const answered = await first;
    expect(answered.status).toBe(200);
    expect(answered.body.reply).toBe(`done: ${input}`);
    const again = await turn(path, input, key);
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(answered.body);
    expect(runs.filter((r) => r === input)).toHaveLength(1);
  });

  it('a claim its dead holder no longer renews lapses after the in-progress TTL: a retry then runs', async () => {
    const key = rand('idem-');
    const input = rand('orphan-');
    const path = turnPath();
    // As a server that claimed the key and died before answering: claimed, never renewed.
    const hash = requestHash('POST', path, { input });
    expect(await base.claimRequestKey(scope, key, hash, 86_400, IN_PROGRESS_TTL_SECONDS)).toEqual({
      state: 'new',
    });
    expect((await turn(path, input, key)).status).toBe(409);
    clock.advance(TTL_MS - 1);
    const early = await turn(path, input, key);
    expect(early.status).toBe(409);
    expect(early.body).toMatchObject({ error: { code: 'conflict' } });
    clock.advance(1);
    const retried = await turn(path, input, key);
    expect(retried.status).toBe(200);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(runs.filter((r) => r === input)).toHaveLength(1);
    const replayed = await turn(path, input, key);
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.body).toEqual(retried.body);
  });

  it('a handler that throws frees its key: the retry runs', async () => {
    const key = rand('idem-');
    const input = rand('fails-');
    const path = turnPath();
    const g = gate();
    gates.set(input, g);
    failOnce.add(input);
    const first = turn(path, input, key);
    await reached(g, first);
    expect(await nextRenewal(key)).toBe(true);
    g.open();
    expect((await first).status).toBe(500);
    const retried = await turn(path, input, key);
    expect(retried.status).toBe(200);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(runs.filter((r) => r === input)).toHaveLength(2);
  });

  it('a client that leaves does not end the claim: renewed until the turn ends, its answer kept', async () => {
    const key = rand('idem-');
    const input = rand('left-');
    const path = turnPath();
    const g = gate();
    gates.set(input, g);
    const leaving = new AbortController();
    const first = post(path, { input }, key, leaving.signal).catch((error: unknown) => error);
    await reached(g, first);
    leaving.abort();
    expect(await first).toBeInstanceOf(Error);
    await outlivesFirstTtl(key, () => turn(path, input, key));
    g.open();
    let again = await turn(path, input, key);
    const end = Date.now() + 5_000;
    while (again.status === 409 && Date.now() < end) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      again = await turn(path, input, key);
    }
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.reply).toBe(`done: ${input}`);
    expect(runs.filter((r) => r === input)).toHaveLength(1);
  });

  for (const route of ['/v1/test/stream', '/v1/test/hijack']) {
    it(`a ${route.slice(9)}ed answer keeps its key in progress until the response has ended`, async () => {
      const key = rand('idem-');
      const name = rand('sse-');
      const g = gate();
      gates.set(name, g);
      const first = await post(route, { name }, key);
      expect(first.status).toBe(200);
      const body = first.text();
      await reached(g, body);
      await outlivesFirstTtl(key, async () => {
        const reply = await post(route, { name }, key);
        return { status: reply.status, text: await reply.text() };
      });
      g.open();
      expect(await body).toContain('event: end');
      let again = await post(route, { name }, key);
      const end = Date.now() + 5_000;
      while (again.status === 409 && Date.now() < end) {
        await again.text();
        await new Promise((resolve) => setTimeout(resolve, 50));
        again = await post(route, { name }, key);
      }
      await again.text();
      expect(again.status).toBe(200);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
    });
  }

  it('a renewal that finds the key gone is logged and not repeated; the request then records nothing', async () => {
    const key = rand('idem-');
    const input = rand('lost-');
    const path = turnPath();
    const g = gate();
    gates.set(input, g);
    const first = turn(path, input, key);
    await reached(g, first);
    // The claim lapses (as when its holder could not reach the store in time) and another request takes it.
    await base.releaseRequestKey(scope, key);
    expect(await base.claimRequestKey(scope, key, 'another-request', 86_400, 60)).toEqual({ state: 'new' });
    expect(await nextRenewal(key)).toBe(false);
    await until('the warning', () => logged.some((l) => l.idempotencyKey === key));
    expect(logged.find((l) => l.idempotencyKey === key)).toMatchObject({
      level: 40,
      msg: expect.stringContaining('lost the Idempotency-Key claim'),
    });
    g.open();
    expect((await first).status).toBe(200);
    // The other request's claim is untouched: still in progress, not completed with this answer.
    expect(await base.claimRequestKey(scope, key, 'another-request', 86_400, 60)).toEqual({
      state: 'in_progress',
    });
    expect(renewalsOf(key)).toHaveLength(1);
  });

  it('no claim is renewed once its request has ended', async () => {
    const count = renewals.length;
    await new Promise((resolve) => setTimeout(resolve, RENEW_WAIT_MS));
    expect(renewals).toHaveLength(count);
    expect(renewals.filter((r) => !r.ok)).toHaveLength(1);
    // Every answer was recorded (or freed) without a failure.
    expect(logged.filter((l) => l.msg.includes('Idempotency-Key') && l.level >= 50)).toEqual([]);
  });
});
