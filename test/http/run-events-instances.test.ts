/**
 * A run's events across server instances that share a store, on PostgreSQL and on the tiered store (Redis
 * over PostgreSQL): two `agentstate serve` processes (turns on their turn threads) whose turns run with the
 * `openai` model against a local Chat Completions server that streams its reply slowly
 * (src/bench/run-events/slow-model.ts). Neither hears of the other's events except by reading the store.
 *
 * A client streams a turn from A, leaves after a few `message.delta` events and comes back on B with
 * `Last-Event-ID`: what it read before and after is the run's whole log, each event once, in order, and B
 * followed the run live to its final event, whose data is the run's answer. A plain JSON turn on B,
 * followed on A from its first event, ends with a final event equal to B's JSON answer.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SlowModel, startSlowModel } from '../../src/bench/run-events/slow-model.js';
import type { RunEvent } from '../../src/core/model.js';
import { runIdFor } from '../../src/core/run-id.js';
import type { TurnResponse } from '../../src/server/turn-runner.js';
import { dropSchema, randomSchema, schemaUrl } from '../store/postgres-env.js';
import { tieredEnv } from '../store/tiered-env.js';
import { API_KEY, call, JWT_SECRET, TENANT } from './instances-helpers.js';
import { type ServeChild, slowModelConfig, startServe } from './serve-child.js';
import { type SseFrame, sseFrames } from './sse.js';

interface TimedFrame extends SseFrame {
  readonly at: number;
}

/** Frames of a response as they come, each with the time it was read; `stop` says when to leave. */
async function readFrames(
  response: Response,
  stop: (frames: readonly TimedFrame[]) => boolean = () => false,
): Promise<TimedFrame[]> {
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toContain('text/event-stream');
  const frames: TimedFrame[] = [];
  for await (const frame of sseFrames(response.body as ReadableStream<Uint8Array>)) {
    frames.push({ ...frame, at: performance.now() });
    if (stop(frames)) break;
  }
  return frames;
}

const ids = (frames: readonly { id: string | null }[]) => frames.map((f) => Number(f.id));
const eventOf = (frame: SseFrame) => frame.data as RunEvent;
const deltaText = (frames: readonly SseFrame[]) =>
  frames
    .filter((f) => f.event === 'message.delta')
    .map((f) => eventOf(f).data.text)
    .join('');

function instancesSuite(name: string, open: () => { url: string; cleanup: () => Promise<void> }): void {
  describe(`run events across instances on ${name}`, { timeout: 60_000 }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentstate-run-events-instances-'));
    const where = open();
    let model: SlowModel;
    let children: ServeChild[] = [];
    let urlA = '';
    let urlB = '';
    let token = '';

    beforeAll(async () => {
      // About 3 s of reply: 480 characters, 4 every 25 ms (B, following after A is left, sees a good part).
      model = await startSlowModel({ replyChars: 480, pieceChars: 4, pieceMs: 25 });
      const config = join(dir, 'config.json');
      writeFileSync(config, slowModelConfig(model.baseURL));
      const env = { AGENTSTATE_API_KEYS: `${TENANT}:${API_KEY}`, AGENTSTATE_JWT_SECRET: JWT_SECRET };
      children = await Promise.all(
        ['a', 'b'].map(async (name) => {
          const cwd = join(dir, name);
          mkdirSync(cwd);
          return startServe({ store: where.url, cwd, config, env });
        }),
      );
      [urlA, urlB] = children.map((child) => child.url) as [string, string];
      const minted = await call<{ token: string }>(urlA, 'POST', '/v1/tokens', {
        token: API_KEY,
        body: { user_id: `ada-${randomBytes(4).toString('hex')}`, ttl_seconds: 3600 },
      });
      expect(minted.status).toBe(201);
      token = minted.body.token;
    }, 120_000);

    afterAll(async () => {
      for (const child of children) await child.stop();
      await model?.stop();
      await where.cleanup();
      rmSync(dir, { recursive: true, force: true });
    }, 60_000);

    const newSession = async (): Promise<string> => {
      const made = await call<{ id: string }>(urlA, 'POST', '/v1/sessions', {
        token,
        body: { agent: 'flight_booking' },
      });
      expect(made.status).toBe(201);
      return made.body.id;
    };
    const follow = (base: string, sessionId: string, runId: string, lastId?: string) =>
      fetch(`${base}/v1/sessions/${sessionId}/runs/${runId}/events`, {
        headers: {
          authorization: `Bearer ${token}`,
          accept: 'text/event-stream',
          ...(lastId === undefined ? {} : { 'last-event-id': lastId }),
        },
      });
    const storedLog = async (base: string, sessionId: string, runId: string): Promise<RunEvent[]> => {
      const read = await call<{ items: RunEvent[] }>(
        base,
        'GET',
        `/v1/sessions/${sessionId}/runs/${runId}/events?limit=1000`,
        { token },
      );
      expect(read.status).toBe(200);
      return read.body.items;
    };

    it('a stream left on A after a few deltas resumes on B with Last-Event-ID: every event once, in order', async () => {
      const sessionId = await newSession();
      const leave = new AbortController();
      const streamed = await fetch(`${urlA}/v1/sessions/${sessionId}/turns`, {
        method: 'POST',
        signal: leave.signal,
        headers: {
          authorization: `Bearer ${token}`,
          accept: 'text/event-stream',
          'content-type': 'application/json',
        },
        body: JSON.stringify({ input: 'I would like to fly somewhere' }),
      });
      const before = await readFrames(
        streamed,
        (frames) => frames.filter((f) => f.event === 'message.delta').length >= 3,
      );
      leave.abort();
      const runId = eventOf(before[0] as SseFrame).run_id;
      expect(before[0]?.event).toBe('run.started');
      const lastId = before.at(-1)?.id as string;

      const after = await readFrames(await follow(urlB, sessionId, runId, lastId));
      expect(Number(after[0]?.id)).toBeGreaterThan(Number(lastId));
      const seen = [...before, ...after];
      // Each event once, in order, ending with the run's final event.
      const seenIds = ids(seen);
      expect(seenIds).toEqual([...seenIds].sort((x, y) => x - y));
      expect(new Set(seenIds).size).toBe(seenIds.length);
      expect(after.at(-1)?.event).toBe('run.completed');
      expect(after.filter((f) => f.event.startsWith('run.') && f.event !== 'run.completed')).toEqual([]);
      // B followed the run live: deltas came to it over time, before the run's end.
      const afterDeltas = after.filter((f) => f.event === 'message.delta');
      expect(afterDeltas.length).toBeGreaterThanOrEqual(3);
      expect((after.at(-1) as TimedFrame).at - (afterDeltas[0] as TimedFrame).at).toBeGreaterThan(200);

      // The whole log read back at the end (from either instance) is what the client read.
      const log = await storedLog(urlB, sessionId, runId);
      expect(await storedLog(urlA, sessionId, runId)).toEqual(log);
      expect(seen.map((f) => f.data)).toEqual(log);
      expect(seen.map((f) => f.event)).toEqual(log.map((e) => e.type));

      // The final event is the run's answer: its reply is the streamed text and the stored message.
      const answer = eventOf(after.at(-1) as SseFrame).data as unknown as TurnResponse;
      expect(answer.run_id).toBe(runId);
      expect(answer.session?.id).toBe(sessionId);
      expect(answer.reply).toMatch(/^«slow» /);
      expect(deltaText(seen)).toBe(answer.reply);
      const messages = await call<{ items: { role: string; content: string }[] }>(
        urlB,
        'GET',
        `/v1/sessions/${sessionId}/messages`,
        { token },
      );
      expect(messages.body.items.map((m) => [m.role, m.content])).toEqual([
        ['user', 'I would like to fly somewhere'],
        ['assistant', answer.reply],
      ]);
    });

    it('a plain turn on B, followed on A from its first event, ends with B’s JSON answer', async () => {
      const sessionId = await newSession();
      const runId = runIdFor(sessionId, 0);
      const turn = call<TurnResponse>(urlB, 'POST', `/v1/sessions/${sessionId}/turns`, {
        token,
        body: { input: 'hello there' },
      });
      // The run is known once its first events are stored (before that, A answers 404).
      let started = false;
      for (let i = 0; i < 100 && !started; i++) {
        const read = await call<{ items: RunEvent[] }>(
          urlA,
          'GET',
          `/v1/sessions/${sessionId}/runs/${runId}/events`,
          { token },
        );
        started = read.status === 200 && read.body.items.length > 0;
        if (!started) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(started).toBe(true);
      const frames = await readFrames(await follow(urlA, sessionId, runId));
      const answered = await turn;
      expect(answered.status).toBe(200);
      expect(frames[0]?.event).toBe('run.started');
      expect(frames.at(-1)?.event).toBe('run.completed');
      expect(frames.map((f) => f.data)).toEqual(await storedLog(urlB, sessionId, runId));
      expect(eventOf(frames.at(-1) as SseFrame).data).toEqual(answered.body);
      expect(deltaText(frames)).toBe(answered.body.reply);
    });
  });
}

instancesSuite('postgres', () => {
  const schema = randomSchema();
  return { url: schemaUrl(schema), cleanup: () => dropSchema(schema) };
});
instancesSuite('the tiered store (Redis over PostgreSQL)', () => tieredEnv());
