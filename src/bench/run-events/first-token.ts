/**
 * From a model's first token to a client's first `message.delta` frame, over HTTP. Two `agentstate serve`
 * processes share the store: M runs its turns on its main thread (`--turn-threads 0`), T on turn threads
 * (`--turn-threads auto`, as `serve` does by default). Turns run with the `openai` model against a local Chat
 * Completions server in this process whose reply starts 300 to 550 ms after the request (at random, so
 * that it falls anywhere in a poller's period) and streams 4 characters every 10 ms (slow-model.ts).
 *
 * Turns go to M and T in turn. A client streams each turn from the server that runs it (same instance);
 * once it has `run.started`, a second client follows the run on the other server (another instance, which
 * learns of the events by polling the store). Both are timed from the moment the model server writes the
 * reply's first piece to the moment each client reads its first `message.delta` frame, on this process's
 * clock.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { childStopper } from '../../harness/load/child-stop.js';
import { cliCommand } from '../../harness/load/server-child.js';
import { SERVER_NODE_FLAGS } from '../../server/heap-policy.js';
import { percentile } from '../checkpoint/measure.js';
import { startSlowModel } from './slow-model.js';
import type { BenchStoreHandle } from './store-cost.js';

export interface LatencyFigures {
  readonly turns: number;
  readonly p50_ms: number;
  readonly p95_ms: number;
  readonly max_ms: number;
}

export interface FirstTokenResult {
  readonly store: string;
  /** Threads of T's turns, as its banner says. */
  readonly turn_threads: number;
  /** The client streaming a turn from M, which runs it on its main thread. */
  readonly same_instance_main_thread: LatencyFigures;
  /** The client streaming a turn from T, which runs it on a turn thread. */
  readonly same_instance_turn_thread: LatencyFigures;
  /** The client following a run on the server that does not run it. */
  readonly other_instance: LatencyFigures;
}

interface Server {
  readonly url: string;
  readonly banner: string;
  close(): Promise<void>;
}

function serve(
  storeUrl: string,
  dir: string,
  config: string,
  threads: string,
  env: NodeJS.ProcessEnv,
): Promise<Server> {
  mkdirSync(dir, { recursive: true });
  const [node, ...rest] = cliCommand() as [string, ...string[]];
  const args = [...SERVER_NODE_FLAGS, ...rest, 'serve', '--store', storeUrl, '--host', '127.0.0.1'];
  args.push('--port', '0', '--data-dir', join(dir, 'data'), '--config', config);
  args.push('--turn-threads', threads);
  const child = spawn(node, args, { cwd: dir, env, stdio: ['ignore', 'ignore', 'pipe'] });
  return new Promise((resolve, reject) => {
    let stderr = '';
    const failed = (code: number | null) => reject(new Error(`serve exited with ${code}: ${stderr}`));
    child.once('exit', failed);
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      const url = /agentstate serving (http:\/\/\S+)/.exec(stderr)?.[1];
      if (url === undefined || !stderr.includes('  chat:')) return;
      child.off('exit', failed);
      resolve({ url, banner: stderr, close: childStopper(child, 10_000) });
    });
  });
}

/** The frames of an event stream: id, event, data and the time each was read. */
async function* frames(
  body: ReadableStream<Uint8Array>,
): AsyncGenerator<{ id: string; event: string; data: string; at: number }> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body) {
    const at = performance.now();
    buffer += decoder.decode(chunk, { stream: true });
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const id = /^id: (.*)$/m.exec(block)?.[1];
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1] ?? '{}';
      if (id !== undefined && event !== undefined) yield { id, event, data, at };
    }
  }
}

/** The time of the stream's first `message.delta`; it is read to its end. */
async function firstDelta(
  response: Response,
  onStarted?: (id: string, runId: string) => void,
): Promise<number> {
  if (!response.ok || response.body === null) throw new Error(`the stream answered ${response.status}`);
  let first = Number.NaN;
  for await (const frame of frames(response.body)) {
    if (frame.event === 'run.started')
      onStarted?.(frame.id, (JSON.parse(frame.data) as { run_id: string }).run_id);
    if (frame.event === 'message.delta' && Number.isNaN(first)) first = frame.at;
  }
  return first;
}

const round = (value: number) => Math.round(value * 10) / 10;

function latency(samples: number[]): LatencyFigures {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    turns: sorted.length,
    p50_ms: round(percentile(sorted, 50)),
    p95_ms: round(percentile(sorted, 95)),
    max_ms: round(sorted.at(-1) ?? 0),
  };
}

/** `turns` streamed turns on each of M and T (and as many followers on the other one), after 4 of warm-up. */
export async function runFirstTokenBench(
  handle: BenchStoreHandle,
  turns: number,
  say: (text: string) => void = () => undefined,
): Promise<FirstTokenResult> {
  const model = await startSlowModel({ replyChars: 120, pieceChars: 4, pieceMs: 10 });
  const dir = mkdtempSync(join(tmpdir(), 'agentstate-first-token-'));
  const apiKey = `ft_${randomBytes(18).toString('hex')}`;
  const tenant = `first-token-${randomBytes(3).toString('hex')}`;
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith('AGENTSTATE_')) delete env[key];
  delete env.NODE_OPTIONS;
  Object.assign(env, {
    AGENTSTATE_API_KEYS: `${tenant}:${apiKey}`,
    AGENTSTATE_JWT_SECRET: randomBytes(32).toString('hex'),
    AGENTSTATE_LOG_LEVEL: 'warn',
  });
  const slow = { kind: 'openai', baseURL: model.baseURL, model: 'slow', maxRetries: 0 };
  const config = join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      limits: { rateLimitMax: 1_000_000 },
      models: { default: 'slow', available: { slow } },
    }),
  );
  const servers: Server[] = [];
  try {
    servers.push(await serve(handle.url, join(dir, 'm'), config, '0', env));
    servers.push(await serve(handle.url, join(dir, 't'), config, 'auto', env));
    const [m, t] = servers as [Server, Server];
    const auth = { authorization: `Bearer ${apiKey}` };
    const same: [number[], number[]] = [[], []];
    const other: number[] = [];
    for (let i = 0; i < 2 * (turns + 4); i++) {
      const [here, there] = i % 2 === 0 ? [m, t] : [t, m];
      const made = await fetch(`${here.url}/v1/sessions`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ agent: 'flight_booking', user_id: `u${i}` }),
      });
      const session = (await made.json()) as { id: string };
      let piece = Number.NaN;
      model.firstPieceAt = (at) => {
        piece = at;
      };
      model.options.firstPieceMs = 300 + Math.random() * 250;
      let follower: Promise<number> | null = null;
      const streamed = await fetch(`${here.url}/v1/sessions/${session.id}/turns`, {
        method: 'POST',
        headers: { ...auth, accept: 'text/event-stream', 'content-type': 'application/json' },
        body: JSON.stringify({ input: 'hello' }),
      });
      const mine = await firstDelta(streamed, (id, runId) => {
        follower ??= fetch(`${there.url}/v1/sessions/${session.id}/runs/${runId}/events`, {
          headers: { ...auth, accept: 'text/event-stream', 'last-event-id': id },
        }).then((response) => firstDelta(response));
      });
      const theirs = await (follower ?? Promise.resolve(Number.NaN));
      if (i < 8) continue; // warm-up
      if ([piece, mine, theirs].some(Number.isNaN)) throw new Error(`turn ${i}: a time is missing`);
      same[i % 2]?.push(mine - piece);
      other.push(theirs - piece);
      if ((i - 7) % 20 === 0) say(`${handle.name}: ${(i - 7) / 2}/${turns} streamed turns on each server`);
    }
    return {
      store: handle.name,
      turn_threads: Number(/turns: on (\d+) thread/.exec(t.banner)?.[1] ?? 0),
      same_instance_main_thread: latency(same[0]),
      same_instance_turn_thread: latency(same[1]),
      other_instance: latency(other),
    };
  } finally {
    for (const server of servers) await server.close();
    await model.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
