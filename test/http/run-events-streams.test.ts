/**
 * The memory of many event streams on one server: `agentstate serve` (a child process on a SQLite file, turns
 * on its main thread) runs 200 turns at once with the `openai` model against a local Chat Completions
 * server that holds every reply before its first piece (src/bench/run-events/slow-model.ts), so every run
 * stays open; 200 clients then follow one run each over Server-Sent Events. The server's memory (after a
 * full garbage collection, test/http/serve-with-gc.ts) is read when it is idle, with the 200 runs
 * waiting, and with the 200 runs and their 200 streams; its CPU while the streams wait too. Then the
 * replies go on and every stream ends with its run's `run.completed`, equal to the turn's JSON answer.
 *
 * The bound is generous (heap growth with the streams under 100 MB); the figures are printed.
 * AGENTSTATE_TEST_STREAMS sets how many (default 200).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SlowModel, startSlowModel } from '../../src/bench/run-events/slow-model.js';
import type { RunEvent } from '../../src/core/model.js';
import { runIdFor } from '../../src/core/run-id.js';
import type { TurnResponse } from '../../src/server/turn-runner.js';
import { type ServeChild, slowModelConfig, startServe } from './serve-child.js';
import { type SseFrame, sseFrames } from './sse.js';

const STREAMS = Number(process.env.AGENTSTATE_TEST_STREAMS ?? 200);
const ENTRY = new URL('./serve-with-gc.ts', import.meta.url).pathname;
const MB = 1024 * 1024;

interface Memory {
  readonly rss: number;
  readonly heapUsed: number;
  readonly heapTotal: number;
  readonly external: number;
}

const dir = mkdtempSync(join(tmpdir(), 'agentstate-run-streams-'));
let model: SlowModel;
let server: ServeChild;
let url = '';

beforeAll(async () => {
  model = await startSlowModel({ replyChars: 120, pieceChars: 4, pieceMs: 20 });
  const config = join(dir, 'config.json');
  writeFileSync(config, slowModelConfig(model.baseURL, { limits: { rateLimitMax: 1_000_000 } }));
  server = await startServe({
    store: `sqlite:${join(dir, 'streams.db')}`,
    cwd: dir,
    config,
    args: ['--turn-threads', '0'],
    nodeArgs: ['--expose-gc', '--no-memory-reducer'],
    entry: ENTRY,
  });
  url = server.url;
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await model?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

/** The server's memory after a full garbage collection. */
async function memory(): Promise<Memory> {
  const from = server.stderr().length;
  server.child.kill('SIGUSR2');
  for (let i = 0; i < 500; i++) {
    const match = /memory (\{.*\})\n/.exec(server.stderr().slice(from));
    if (match) return JSON.parse(match[1] as string) as Memory;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('the server did not tell its memory');
}

/** CPU (user + system) the server has used, in ms (Linux /proc; USER_HZ is 100). */
function cpuMs(): number {
  const stat = readFileSync(`/proc/${server.child.pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

async function post<T>(path: string, body: unknown): Promise<{ status: number; body: T }> {
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as T };
}

const mb = (bytes: number) => Math.round((bytes / MB) * 10) / 10;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe(`${STREAMS} event streams on one server`, () => {
  it('hold little memory, and each ends with its run’s answer', { timeout: 120_000 }, async () => {
    // Warm-up: the code of a streamed run, compiled and cached.
    for (let i = 0; i < 5; i++) {
      const made = await post<{ id: string }>('/v1/sessions', { agent: 'flight_booking' });
      expect((await post(`/v1/sessions/${made.body.id}/turns`, { input: 'hello' })).status).toBe(200);
    }
    const idle = await memory();

    const sessions: string[] = [];
    for (let i = 0; i < STREAMS; i += 20) {
      const batch = Array.from({ length: Math.min(20, STREAMS - i) }, () =>
        post<{ id: string }>('/v1/sessions', { agent: 'flight_booking' }),
      );
      for (const made of await Promise.all(batch)) sessions.push(made.body.id);
    }
    let release: () => void = () => undefined;
    model.gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const repliesBefore = model.replies;
    const turns = sessions.map((id) => post<TurnResponse>(`/v1/sessions/${id}/turns`, { input: 'hello' }));
    // Every run waits at its reply (its first events are stored by then).
    for (let i = 0; i < 1200 && model.replies - repliesBefore < STREAMS; i++) await sleep(50);
    expect(model.replies - repliesBefore).toBe(STREAMS);
    const waiting = await memory();

    const connected: Promise<void>[] = [];
    const streams = sessions.map(async (id) => {
      const response = await fetch(`${url}/v1/sessions/${id}/runs/${runIdFor(id, 0)}/events`, {
        headers: { accept: 'text/event-stream' },
      });
      expect(response.status).toBe(200);
      const frames: SseFrame[] = [];
      let opened: () => void = () => undefined;
      connected.push(
        new Promise<void>((resolve) => {
          opened = resolve;
        }),
      );
      for await (const frame of sseFrames(response.body as ReadableStream<Uint8Array>)) {
        frames.push(frame);
        if (frame.event === 'checkpoint.created') opened();
      }
      return frames;
    });
    for (let i = 0; i < 600 && connected.length < STREAMS; i++) await sleep(50);
    await Promise.all(connected);
    // The streams wait for the held replies: their cost while they poll the store.
    const cpuBefore = cpuMs();
    const since = performance.now();
    await sleep(2000);
    const cpuPerSecond = ((cpuMs() - cpuBefore) * 1000) / (performance.now() - since);
    const following = await memory();

    model.gate = null;
    release();
    const answers = await Promise.all(turns);
    const followed = await Promise.all(streams);
    for (const [i, frames] of followed.entries()) {
      const answer = answers[i] as { status: number; body: TurnResponse };
      expect(answer.status).toBe(200);
      const ids = frames.map((f) => Number(f.id));
      expect(ids).toEqual(ids.map((_, k) => k + 1));
      expect(frames.at(-1)?.event).toBe('run.completed');
      expect(((frames.at(-1) as SseFrame).data as RunEvent).data).toEqual(answer.body);
    }

    const figures = {
      streams: STREAMS,
      idle: { rss_mb: mb(idle.rss), heap_mb: mb(idle.heapUsed) },
      runs_waiting: { rss_mb: mb(waiting.rss), heap_mb: mb(waiting.heapUsed) },
      runs_and_streams: { rss_mb: mb(following.rss), heap_mb: mb(following.heapUsed) },
      heap_growth_mb: mb(following.heapUsed - idle.heapUsed),
      streams_heap_kb_each: Math.round((following.heapUsed - waiting.heapUsed) / STREAMS / 1024),
      streams_rss_kb_each: Math.round((following.rss - waiting.rss) / STREAMS / 1024),
      cpu_ms_per_s_while_streams_wait: Math.round(cpuPerSecond),
    };
    console.info(`run event streams: ${JSON.stringify(figures)}`);
    expect(following.heapUsed - idle.heapUsed).toBeLessThan(100 * MB);
    expect(following.rss - idle.rss).toBeLessThan(200 * MB);
  });
});
