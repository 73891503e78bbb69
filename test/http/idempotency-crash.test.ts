/**
 * A server killed while it holds an Idempotency-Key: a real `agentstate serve --model openai` process on a
 * SQLite file runs a turn whose model call the test holds back, and is killed (SIGKILL) mid-turn. A new
 * server on the same file answers the retry (same key, same body) within about one in-progress TTL
 * (IN_PROGRESS_TTL_SECONDS, as long as the session's run lease), not 409 "still in progress" for minutes.
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IN_PROGRESS_TTL_SECONDS } from '../../src/http/idempotency.js';
import { spawnCli, tempDir } from '../cli/run.js';
import { type ChatCompletionsServer, startChatCompletionsServer } from './chat-completions-server.js';

const tmp = tempDir();
const children: ChildProcess[] = [];
let model: ChatCompletionsServer;
let gate: Server;
let gateUrl = '';
/** While true, the model's answers wait; `waiting` counts the calls that do. */
let holding = true;
let waiting = 0;
const releases: (() => void)[] = [];

/** In front of the model: holds its calls while `holding`, else passes them on. */
async function passOn(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  if (holding) {
    waiting += 1;
    await new Promise<void>((resolve) => releases.push(resolve));
    if (res.destroyed) return;
  }
  const upstream = await fetch(`${new URL(model.baseURL).origin}${req.url ?? ''}`, {
    method: req.method ?? 'POST',
    headers: {
      'content-type': req.headers['content-type'] ?? 'application/json',
      authorization: req.headers.authorization ?? '',
    },
    body: Buffer.concat(chunks),
  });
  res.writeHead(upstream.status, {
    'content-type': upstream.headers.get('content-type') ?? 'application/json',
  });
  if (upstream.body === null) res.end();
  else Readable.fromWeb(upstream.body as Parameters<typeof Readable.fromWeb>[0]).pipe(res);
}

function serve(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawnCli(
    ['serve', '--model', 'openai', '--port', '0', '--store', `sqlite:${tmp.dir}/crash.db`],
    tmp.dir,
    {
      OPENAI_BASE_URL: `${gateUrl}/v1`,
      OPENAI_API_KEY: 'sk-test-crash',
      AGENTSTATE_OPENAI_MODEL: 'fake-gpt',
    },
  );
  children.push(child);
  child.stdout?.resume();
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`no URL printed: ${output}`)), 90_000);
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /agentstate serving (http:\/\/\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve({ child, url: match[1] as string });
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}: ${output}`));
    });
  });
}

async function call(url: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text };
}

beforeAll(async () => {
  model = await startChatCompletionsServer();
  gate = createServer((req, res) => {
    passOn(req, res).catch(() => res.destroy());
  });
  gate.listen(0, '127.0.0.1');
  await once(gate, 'listening');
  gateUrl = `http://127.0.0.1:${(gate.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  }
  for (const release of releases.splice(0)) release();
  gate?.closeAllConnections();
  await new Promise<void>((resolve) => (gate ? gate.close(() => resolve()) : resolve()));
  await model?.stop();
  tmp.cleanup();
});

describe('a server killed while it holds an Idempotency-Key', { timeout: 180_000 }, () => {
  it('a new server answers the retry within about one in-progress TTL', async () => {
    const first = await serve();
    const made = await call(first.url, '/v1/sessions', { agent: 'flight_booking' });
    expect(made.status).toBe(201);
    const id = (JSON.parse(made.text) as { id: string }).id;
    const path = `/v1/sessions/${id}/turns`;
    const body = { input: 'I want to fly from Paris to Lisbon' };
    const headers = { 'idempotency-key': `crash-${id}` };

    // The turn claims the key, takes the session's lease and waits on the model: the server dies there.
    const cut = call(first.url, path, body, headers).catch((error: unknown) => error);
    const deadline = Date.now() + 30_000;
    while (waiting === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
    expect(waiting).toBeGreaterThan(0);
    first.child.kill('SIGKILL');
    await once(first.child, 'exit');
    const killed = Date.now();
    expect(await cut).toBeInstanceOf(Error);
    holding = false;
    for (const release of releases.splice(0)) release();

    const second = await serve();
    const upAfter = Date.now() - killed;
    const refused: string[] = [];
    let retried = await call(second.url, path, body, headers);
    while (retried.status === 409 && Date.now() - killed < 60_000) {
      refused.push(retried.text);
      await new Promise((resolve) => setTimeout(resolve, 250));
      retried = await call(second.url, path, body, headers);
    }
    const waited = Date.now() - killed;
    expect(retried.status, retried.text).toBe(200);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(JSON.parse(retried.text)).toMatchObject({ reply: expect.stringContaining('«fake-gpt»') });
    // Served once the dead server's claim (and its run lease) lapsed: about one TTL, never ten minutes.
    expect(IN_PROGRESS_TTL_SECONDS).toBeLessThanOrEqual(10);
    // (Bounds loose enough for a loaded 2-core CI machine; the regression this guards is ten minutes.)
    expect(waited).toBeLessThan(Math.max(30_000, upAfter + 15_000));
    for (const text of refused) expect(text).toContain('"conflict"');

    const replayed = await call(second.url, path, body, headers);
    expect(replayed.status).toBe(200);
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.text).toBe(retried.text);
  });
});
