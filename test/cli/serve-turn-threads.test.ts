/**
 * `agentstate serve --turn-threads N` as a real process: turns run on worker threads with store connections
 * of their own, and nothing a client sees changes: a booking completes, one session's concurrent turns
 * still give one 200 and one 409, many users booking at once each get only their own data, errors raised
 * on a thread answer as on the main thread, the threads' store metrics are in /metrics, an `--agents`
 * module's agents and tools run on the threads, SIGTERM finishes a turn in flight, and bad uses are refused
 * in one sentence. On PostgreSQL too (AGENTSTATE_TEST_POSTGRES_URL, or the README's default on 127.0.0.1).
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase } from '../store/postgres-env.js';
import { hasStackTrace, runCli, spawnCli, tempDir } from './run.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

interface Served {
  readonly child: ChildProcess;
  readonly url: string;
  readonly exited: Promise<number | null>;
  stderr: () => string;
}

async function serve(args: readonly string[]): Promise<Served> {
  const child = spawnCli(['serve', '--port', '0', '--data-dir', join(tmp.dir, 'data'), ...args], tmp.dir, {
    AGENTSTATE_LOG_LEVEL: 'warn',
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL printed; stderr: ${stderr}`)), 60_000);
    const look = () => {
      const match = /agentstate serving (http:\/\/\S+)/.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolve(match[1] as string);
      }
    };
    child.stderr?.on('data', look);
    void exited.then((code) => reject(new Error(`serve exited with ${code}: ${stderr}`)));
  });
  return { child, url, exited, stderr: () => stderr };
}

async function call(url: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, text, json: () => JSON.parse(text) as Record<string, unknown> };
}

async function newSession(url: string, userId: string, agent = 'flight_booking'): Promise<string> {
  const made = await call(url, 'POST', '/v1/sessions', { agent, user_id: userId });
  expect(made.status).toBe(201);
  return made.json().id as string;
}

const BOOKING = (name: string) => [
  'I want to book a flight from Beijing to Tokyo',
  'on 2027-03-01',
  'economy class please',
  `my name is ${name}`,
  'yes',
];

async function book(url: string, session: string, name: string): Promise<string[]> {
  const replies: string[] = [];
  for (const input of BOOKING(name)) {
    const turn = await call(url, 'POST', `/v1/sessions/${session}/turns`, { input });
    expect(turn.status, turn.text).toBe(200);
    replies.push(turn.json().reply as string);
  }
  return replies;
}

/** A turn whose body arrives in two parts, `onHalf` called between them; resolves with the raw response. */
function slowTurn(url: string, path: string, body: string, onHalf: () => void): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      const half = Math.floor(body.length / 2);
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body.slice(0, half)}`,
      );
      setTimeout(() => {
        onHalf();
        setTimeout(() => socket.write(body.slice(half)), 500);
      }, 1_000); // the server has read the head by then, even on a loaded machine
    });
    let response = '';
    socket.on('data', (chunk) => {
      response += chunk.toString();
    });
    socket.on('end', () => resolve(response));
    socket.on('error', reject);
  });
}

/**
 * Two turns of one new session sent at once, until they overlap (a turn can finish on one thread before the
 * other thread asks for the session's lease, and then both answer 200, one after the other). Every pair is
 * checked: 200 and 409, or two 200s whose messages did not interleave. Returns the statuses of the first
 * pair that overlapped, and its 409's error.
 */
async function concurrentPair(url: string, user: string, input: string) {
  for (let attempt = 0; attempt < 10; attempt++) {
    const session = await newSession(url, user);
    const both = await Promise.all(
      [0, 1].map(() => call(url, 'POST', `/v1/sessions/${session}/turns`, { input })),
    );
    const statuses = both.map((t) => t.status).sort();
    if (statuses[0] === 200 && statuses[1] === 409)
      return { statuses, error: both.find((t) => t.status === 409)?.json().error };
    expect(statuses).toEqual([200, 200]);
    const messages = await call(url, 'GET', `/v1/sessions/${session}/messages`);
    const roles = (messages.json().items as { role: string }[]).map((m) => m.role);
    expect(roles).toEqual(['user', 'assistant', 'user', 'assistant']);
  }
  throw new Error('10 pairs of concurrent turns never overlapped');
}

describe('agentstate serve --turn-threads 2 (SQLite)', { timeout: 180_000 }, () => {
  let served: Served;
  beforeAll(async () => {
    served = await serve(['--store', `sqlite:${join(tmp.dir, 'threads.db')}`, '--turn-threads', '2']);
  });

  it('says so at start and completes a booking', async () => {
    expect(served.stderr()).toMatch(/turns: on 2 thread\(s\) of their own/);
    const session = await newSession(served.url, 'ada');
    const replies = await book(served.url, session, 'Ada Lovelace');
    expect(replies.at(-1)).toMatch(/^Booked: .* for Ada Lovelace\. Booking reference bk_\w+\.$/);
    const tasks = await call(served.url, 'GET', `/v1/tasks?session_id=${session}&user_id=ada`);
    expect(tasks.status).toBe(200);
    expect(tasks.json().items).toEqual([expect.objectContaining({ state: 'DONE' })]);
  });

  it('keeps two concurrent turns of one session apart: one 200, one 409 conflict', async () => {
    const pair = await concurrentPair(served.url, 'grace', 'I want to book a flight from Paris to Tokyo');
    expect(pair.statuses).toEqual([200, 409]);
    expect(pair.error).toMatchObject({ code: 'conflict' });
  });

  it('runs 8 users booking at once, each seeing only its own data', async () => {
    const users = Array.from({ length: 8 }, (_, i) => ({
      id: `user${i}`,
      name: `Passenger Number${'abcdefgh'[i]}`,
    }));
    const sessions = await Promise.all(users.map((u) => newSession(served.url, u.id)));
    const replies = await Promise.all(users.map((u, i) => book(served.url, sessions[i] as string, u.name)));
    replies.forEach((mine, i) => {
      expect(mine.at(-1)).toContain(`for ${users[i]?.name}.`);
      for (const other of users) if (other !== users[i]) expect(mine.join('\n')).not.toContain(other.name);
    });
  });

  it('answers an error raised on a thread as the main thread would (resume without a run: 409)', async () => {
    const session = await newSession(served.url, 'alan');
    const resumed = await call(served.url, 'POST', `/v1/sessions/${session}/resume`, {});
    expect(resumed.status).toBe(409);
    expect(resumed.json().error).toMatchObject({
      code: 'conflict',
      message: `session ${session} has no run to resume: send a turn first`,
    });
  });

  it('streams a turn run on a thread, its events from run.started to run.completed', async () => {
    const session = await newSession(served.url, 'stella');
    const response = await fetch(`${served.url}/v1/sessions/${session}/turns`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ input: 'I want to book a flight from Beijing to Tokyo' }),
    });
    expect(response.status).toBe(200);
    const text = await response.text();
    const types = [...text.matchAll(/^event: (.+)$/gm)].map((m) => m[1]);
    expect(types[0]).toBe('run.started');
    expect(types.at(-1)).toBe('run.completed');
    expect(types).toContain('message.delta');
  });

  it("adds the threads' store metrics to /metrics", async () => {
    const metrics = await call(served.url, 'GET', '/metrics');
    expect(metrics.status).toBe(200);
    // Checkpoints are written only by turns, so only on the threads.
    const written = /^agentstate_checkpoint_write_duration_seconds_count\{adapter="sqlite"\} (\d+)$/m.exec(
      metrics.text,
    );
    expect(Number(written?.[1] ?? 0)).toBeGreaterThan(10);
    expect(metrics.text).toMatch(
      /^agentstate_turns_total\{agent="flight_booking",model="rules",outcome="ok"\} \d+$/m,
    );
  });

  it('on SIGTERM finishes the turn in flight, then exits 0', async () => {
    const session = await newSession(served.url, 'barbara');
    const response = await slowTurn(
      served.url,
      `/v1/sessions/${session}/turns?user_id=barbara`,
      JSON.stringify({ input: 'I want to book a flight from Paris to Tokyo' }),
      () => served.child.kill('SIGTERM'),
    );
    expect(response).toMatch(/^HTTP\/1\.1 200/);
    expect(response).toMatch(/What date do you want to fly\?/);
    expect(await served.exited).toBe(0);
  });
});

describe('agentstate serve --turn-threads: agents modules and refusals', { timeout: 120_000 }, () => {
  it("runs an --agents module's agents and tools on the threads, beside the built-in ones", async () => {
    // .mts: a thread loads TypeScript through tsx's ES module hooks only (from the build, plain .js/.mjs).
    // `travel` books with the built-in airline.book; `rail` with the module's own rail.book, which writes
    // to a file under the dataDir every agents module is given, and names the thread it ran on.
    const agentsFile = join(tmp.dir, 'thread-agents.mts');
    const builtin = join(dirname(fileURLToPath(import.meta.url)), '../../src/agents/index.ts');
    writeFileSync(
      agentsFile,
      [
        "import { appendFileSync } from 'node:fs';",
        "import { join } from 'node:path';",
        "import { threadId } from 'node:worker_threads';",
        `import { AirlineBookParams, flightBookingAgent, flightBookingTask } from ${JSON.stringify(builtin)};`,
        'const railTask = {',
        '  ...flightBookingTask,',
        "  name: 'rail_booking',",
        '  nextCall: (slots, results) => {',
        '    const call = flightBookingTask.nextCall(slots, results);',
        "    return call === null ? null : { ...call, tool: 'rail.book' };",
        '  },',
        '};',
        'export const agents = [',
        "  { ...flightBookingAgent, name: 'travel' },",
        "  { ...flightBookingAgent, name: 'rail', taskTypes: [railTask] },",
        '];',
        'export function tools(options) {',
        '  const book = {',
        "    name: 'rail.book',",
        "    description: 'books a train',",
        '    params: AirlineBookParams,',
        '    async execute(params, ctx) {',
        '      const line = { key: ctx.idempotencyKey, passenger: params.passenger_name, thread: threadId };',
        "      appendFileSync(join(options.dataDir, 'rail.jsonl'), JSON.stringify(line) + '\\n');",
        "      return { booking_id: 'rail-' + threadId };",
        '    },',
        '  };',
        '  return [book];',
        '}',
        '',
      ].join('\n'),
    );
    const served = await serve([
      '--store',
      `sqlite:${join(tmp.dir, 'agents.db')}`,
      '--turn-threads',
      '1',
      '--agents',
      agentsFile,
    ]);
    const session = await newSession(served.url, 'kay', 'travel');
    const replies = await book(served.url, session, 'Kay Travel');
    expect(replies.at(-1)).toMatch(/Booking reference bk_\w+\.$/);
    const rail = await newSession(served.url, 'kay', 'rail');
    const railReplies = await book(served.url, rail, 'Kay Rail');
    expect(railReplies.at(-1)).toMatch(/Booking reference rail-[1-9]\d*\.$/);
    const lines = readFileSync(join(tmp.dir, 'data', 'rail.jsonl'), 'utf8')
      .trim()
      .split('\n');
    expect(lines.map((line) => JSON.parse(line).passenger)).toEqual(['Kay Rail']);
    served.child.kill('SIGTERM');
    expect(await served.exited).toBe(0);
  });

  it('fails the turns of a thread that dies with internal (500), starts it again and goes on', async () => {
    // An agent whose greeting ends the thread it runs on (process.exit in a worker ends that thread only).
    const agentsFile = join(tmp.dir, 'crashing-agents.mjs');
    writeFileSync(
      agentsFile,
      "export const agents = [{ name: 'crasher', description: 'ends its thread', taskTypes: [], get greeting() { process.exit(3); } }];\n",
    );
    const served = await serve([
      '--store',
      `sqlite:${join(tmp.dir, 'crash.db')}`,
      '--turn-threads',
      '1',
      '--agents',
      agentsFile,
    ]);
    const crashing = await newSession(served.url, 'eve', 'crasher');
    const died = await call(served.url, 'POST', `/v1/sessions/${crashing}/turns`, { input: 'hello' });
    expect(died.status).toBe(500);
    expect(died.json().error).toMatchObject({ code: 'internal' });
    const said = /turn thread 0 stopped \(exit code 3\); starting it again/;
    for (let waited = 0; !said.test(served.stderr()) && waited < 10_000; waited += 50) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(served.stderr()).toMatch(said);
    // Sent while the only thread is being started again: the turns wait for it, then run there.
    const session = await newSession(served.url, 'eve');
    const replies = await book(served.url, session, 'Eve Again');
    expect(replies.at(-1)).toMatch(/Booking reference bk_\w+\.$/);
    served.child.kill('SIGTERM');
    expect(await served.exited).toBe(0);
  });

  it('refuses memory:, a bad count and --workers in one sentence', async () => {
    const cases: [string[], RegExp][] = [
      [['--store', 'memory:', '--turn-threads', '2'], /--turn-threads needs a store every thread can open/],
      [['--turn-threads', 'two'], /--turn-threads must be auto or a whole number from 0 to 64, got "two"/],
      [['--turn-threads', '65'], /--turn-threads must be auto or a whole number from 0 to 64, got "65"/],
      [['--store', 'sqlite::memory:', '--turn-threads', '1'], /sqlite::memory: lives in one thread/],
      [
        ['--store', `sqlite:${join(tmp.dir, 'w.db')}`, '--turn-threads', '2', '--workers', '2'],
        /--turn-threads and --workers cannot be combined/,
      ],
    ];
    for (const [args, message] of cases) {
      const result = await runCli(['serve', '--port', '0', ...args], tmp.dir);
      expect(result.code, result.stderr).not.toBe(0);
      expect(result.stderr).toMatch(message);
      expect(hasStackTrace(result.stderr)).toBe(false);
    }
  });
});

describe('agentstate serve --turn-threads 2 (PostgreSQL)', { timeout: 120_000 }, () => {
  // A database of its own, dropped afterwards.
  let database: { url: string; drop: () => Promise<void> } | undefined;
  let storeUrl = '';
  beforeAll(async () => {
    database = await createDatabase();
    storeUrl = database.url;
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('completes bookings of 4 users at once and one session’s concurrent turns give 200 and 409', async () => {
    const served = await serve(['--store', storeUrl, '--turn-threads', '2']);
    const names = ['Ann Alpha', 'Bob Beta', 'Cy Gamma', 'Di Delta'];
    const sessions = await Promise.all(names.map((_, i) => newSession(served.url, `pg${i}`)));
    const replies = await Promise.all(names.map((name, i) => book(served.url, sessions[i] as string, name)));
    replies.forEach((mine, i) => {
      expect(mine.at(-1)).toContain(`for ${names[i]}.`);
    });
    const pair = await concurrentPair(served.url, 'pgx', 'I want to book a flight');
    expect(pair.statuses).toEqual([200, 409]);
    served.child.kill('SIGTERM');
    expect(await served.exited).toBe(0);
  });
});
