/**
 * A server killed with SIGKILL in the middle of a run whose reply streams, on SQLite and on PostgreSQL:
 * `agentstate serve` (a child process, turns on its turn threads) runs a turn with the `openai` model
 * against a local Chat Completions server that streams its reply slowly (src/bench/run-events/slow-model.ts),
 * a client streams the turn (`Accept: text/event-stream`), and the server is killed once the client has
 * read a few `message.delta` events. A new `agentstate serve` on the same store finishes the run (SQLite:
 * `POST .../resume`; PostgreSQL: the same turn sent again, which finishes the interrupted run first and
 * answers with it), and the client comes back with the `Last-Event-ID` it last saw: its stream ends with
 * `run.completed`, whose data is that answer; it never receives an event twice and the ids keep increasing.
 *
 * What the client sees of the text: the deltas of the first attempt, cut off where the kill stopped it
 * (some of them may reach the client only after it comes back: stored before the kill, not yet read), then
 * `run.started` with `resumed: true`, then the resumed attempt's deltas, which are the whole reply from its
 * start again (the model's reply is not recorded until it is complete, so the resumed attempt asks for it
 * anew). A client showing the text must start over at the resumed `run.started`; the stored conversation
 * has the reply once.
 *
 * The lease of the killed server's run holds the session until it runs out (10 s): the new server answers
 * 409 until then, and the test sends again.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SlowModel, startSlowModel } from '../../src/bench/run-events/slow-model.js';
import type { RunEvent } from '../../src/core/model.js';
import type { TurnResponse } from '../../src/server/turn-runner.js';
import { dropSchema, randomSchema, schemaUrl } from '../store/postgres-env.js';
import { type ServeChild, slowModelConfig, startServe } from './serve-child.js';
import { type SseFrame, sseFrames } from './sse.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const eventOf = (frame: SseFrame) => frame.data as RunEvent;
const text = (frames: readonly SseFrame[]) => frames.map((f) => eventOf(f).data.text).join('');

async function json<T>(url: string, method = 'GET', body?: unknown): Promise<{ status: number; body: T }> {
  const response = await fetch(url, {
    method,
    ...(body === undefined
      ? {}
      : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as T };
}

function crashSuite(
  name: string,
  how: 'resume' | 'same turn',
  open: () => { url: string; cleanup: () => Promise<void> },
) {
  describe(`a server killed mid-stream, on ${name}`, { timeout: 90_000 }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentstate-run-events-crash-'));
    const where = open();
    let model: SlowModel;
    let config = '';
    const children: ServeChild[] = [];
    const serve = async () => {
      const started = await startServe({ store: where.url, cwd: dir, config });
      children.push(started);
      return started;
    };

    beforeAll(async () => {
      // A reply of 600 characters, 4 every 30 ms: 4.5 s, far longer than the client waits before the kill.
      model = await startSlowModel({ replyChars: 600, pieceChars: 4, pieceMs: 30 });
      config = join(dir, 'config.json');
      writeFileSync(config, slowModelConfig(model.baseURL));
    });

    afterAll(async () => {
      for (const child of children) await child.stop();
      await model?.stop();
      await where.cleanup();
      rmSync(dir, { recursive: true, force: true });
    }, 60_000);

    it('the client comes back with Last-Event-ID and reads the rest once, to run.completed', async () => {
      const first = await serve();
      const made = await json<{ id: string }>(`${first.url}/v1/sessions`, 'POST', {
        agent: 'flight_booking',
      });
      expect(made.status).toBe(201);
      const sessionId = made.body.id;
      const input = 'I would like to fly somewhere';

      // The client streams the turn and the server dies under it, after some deltas.
      const streamed = await fetch(`${first.url}/v1/sessions/${sessionId}/turns`, {
        method: 'POST',
        headers: { accept: 'text/event-stream', 'content-type': 'application/json' },
        body: JSON.stringify({ input }),
      });
      expect(streamed.status).toBe(200);
      const before: SseFrame[] = [];
      try {
        for await (const frame of sseFrames(streamed.body as ReadableStream<Uint8Array>)) {
          before.push(frame);
          if (before.filter((f) => f.event === 'message.delta').length === 4) first.child.kill('SIGKILL');
        }
      } catch {
        // The connection is cut by the kill.
      }
      await first.exited;
      expect(first.child.signalCode).toBe('SIGKILL');
      expect(before.map((f) => f.event).slice(0, 2)).toEqual(['run.started', 'checkpoint.created']);
      expect(eventOf(before[0] as SseFrame).data.resumed).toBe(false);
      expect(before.filter((f) => f.event === 'message.delta').length).toBeGreaterThanOrEqual(4);
      expect(before.some((f) => f.event === 'run.completed')).toBe(false);
      const lastId = before.at(-1)?.id as string;
      const runId = eventOf(before[0] as SseFrame).run_id;
      const events = (base: string) => `${base}/v1/sessions/${sessionId}/runs/${runId}/events`;

      // A new server on the same store; the resumed attempt's reply streams faster.
      model.options.pieceMs = 5;
      const second = await serve();
      const back = fetch(events(second.url), {
        headers: { accept: 'text/event-stream', 'last-event-id': lastId },
      }).then(async (response) => {
        expect(response.status).toBe(200);
        const frames: SseFrame[] = [];
        for await (const frame of sseFrames(response.body as ReadableStream<Uint8Array>)) frames.push(frame);
        return frames;
      });
      let answer: { status: number; body: TurnResponse & { error?: { code: string } } };
      for (;;) {
        answer =
          how === 'resume'
            ? await json(`${second.url}/v1/sessions/${sessionId}/resume`, 'POST', {})
            : await json(`${second.url}/v1/sessions/${sessionId}/turns`, 'POST', { input });
        // The killed run's lease holds the session until it runs out.
        if (answer.status !== 409) break;
        expect(answer.body.error?.code).toBe('conflict');
        await sleep(250);
      }
      expect(answer.status).toBe(200);
      expect(answer.body.run_id).toBe(runId);
      expect(answer.body.resumed).toBe(true);
      const after = await back;

      // Every event once, ids increasing, ending with run.completed whose data is the answer.
      const seen = [...before, ...after];
      const ids = seen.map((f) => Number(f.id));
      expect(Number(after[0]?.id)).toBeGreaterThan(Number(lastId));
      expect(ids).toEqual([...ids].sort((x, y) => x - y));
      expect(new Set(ids).size).toBe(ids.length);
      expect(after.at(-1)?.event).toBe('run.completed');
      expect(eventOf(after.at(-1) as SseFrame).data).toEqual(answer.body);
      const log = await json<{ items: RunEvent[] }>(`${events(second.url)}?limit=1000`);
      expect(seen.map((f) => f.data)).toEqual(log.body.items);

      // The text: the first attempt's deltas (cut short), run.started resumed, the whole reply again.
      const restart = seen.findIndex((f, i) => i > 0 && f.event === 'run.started');
      expect(seen.filter((f) => f.event === 'run.started')).toHaveLength(2);
      expect(restart).toBeGreaterThan(before.length - 1);
      expect(eventOf(seen[restart] as SseFrame).data.resumed).toBe(true);
      const firstAttempt = text(seen.slice(0, restart).filter((f) => f.event === 'message.delta'));
      const resumedAttempt = text(seen.slice(restart).filter((f) => f.event === 'message.delta'));
      expect(resumedAttempt).toBe(answer.body.reply);
      expect(answer.body.reply.startsWith(firstAttempt)).toBe(true);
      expect(firstAttempt.length).toBeGreaterThan(0);
      expect(firstAttempt.length).toBeLessThan(answer.body.reply.length);
      expect(seen.filter((f) => f.event === 'run.failed')).toEqual([]);

      // The conversation holds the turn once.
      const messages = await json<{ items: { role: string; content: string }[] }>(
        `${second.url}/v1/sessions/${sessionId}/messages`,
      );
      expect(messages.body.items.map((m) => [m.role, m.content])).toEqual([
        ['user', input],
        ['assistant', answer.body.reply],
      ]);
    });
  });
}

crashSuite('SQLite', 'resume', () => {
  const dir = mkdtempSync(join(tmpdir(), 'agentstate-crash-db-'));
  return {
    url: `sqlite:${join(dir, 'crash.db')}`,
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
});
crashSuite('PostgreSQL', 'same turn', () => {
  const schema = randomSchema();
  return { url: schemaUrl(schema), cleanup: () => dropSchema(schema) };
});
