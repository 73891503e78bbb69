/**
 * Turns sent with `Idempotency-Key` survive a server killed under them, with real processes: `agentstate
 * serve` (rules model, SQLite file, turn threads as by default) books flights with the demo airline, run
 * apart from it as a deployment shares one (AGENTSTATE_AIRLINE_URL), so a booking made just before a kill
 * stays made; the airline answers 250 ms after its booking is on disk, as a remote one would.
 *
 * N users hold the four-turn flight_booking conversation at once, every turn sent with a key stable per
 * user and turn. The server is killed (SIGKILL) at least three times, each a random 50-400 ms after it
 * answered its first turn (so while turns run, at any step of the conversations), and started again on
 * the same file and port. Each client retries its current request with the same key and body on a
 * connection error, 409 conflict (the key still in progress, the session's lease still held by the dead
 * server: both lapse within about 10 s) and 5xx, until it gets a 200. Then, for every user: the session
 * holds exactly the eight messages expected, in order (no input twice), each the answer its turn got; its
 * task is DONE; and the airline booked that user's passenger exactly once (its ledger, and its effect log,
 * which would count a booking made twice under two keys). The figures (retries, replays, how each cut turn
 * was answered) are printed.
 *
 * AGENTSTATE_TEST_KILL_USERS (default 8) and AGENTSTATE_TEST_KILLS (default 3) make a bigger run.
 */
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import type { AirlineService } from '../../src/demo/airline/server.js';
import { readEffectLog, readLedger, startAirlineService } from '../../src/demo/index.js';
import {
  inputsOf,
  type Kill,
  type Message,
  passengerOf,
  type Reason,
  repliesOf,
  type TurnAnswer,
  type User,
} from './idempotency-kill-script.js';
import { spawnCli, tempDir } from './run.js';

const USERS = Number(process.env.AGENTSTATE_TEST_KILL_USERS ?? 8);
const KILLS = Math.max(3, Number(process.env.AGENTSTATE_TEST_KILLS ?? 3));
/** Past this, a client stops retrying and the user's conversation counts as never completed. */
const GIVE_UP_MS = 40_000 + KILLS * 15_000;

const tmp = tempDir();
const DB = join(tmp.dir, 'kill.db');
const started = Date.now();
const elapsed = () => Date.now() - started;

interface Server {
  readonly generation: number;
  readonly child: ChildProcess;
  readonly exited: Promise<unknown>;
  output: string;
}

let airline: AirlineService | null = null;
let server: Server | null = null;
const servers: Server[] = [];

afterAll(async () => {
  for (const one of servers) {
    if (one.child.exitCode === null && one.child.signalCode === null) {
      one.child.kill('SIGTERM');
      await one.exited;
    }
  }
  await airline?.close();
  tmp.cleanup();
});

/** Starts `agentstate serve` on the SQLite file (on `port`, or a free one); resolves once it listens. */
async function serve(port: number): Promise<{ server: Server; url: string }> {
  const child = spawnCli(
    ['serve', '--port', String(port), '--store', `sqlite:${DB}`, '--data-dir', join(tmp.dir, 'data')],
    tmp.dir,
    { AGENTSTATE_AIRLINE_URL: (airline as AirlineService).url, AGENTSTATE_LOG_LEVEL: 'warn' },
  );
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const one: Server = { generation: servers.length, child, exited, output: '' };
  servers.push(one);
  child.stdout?.on('data', (chunk: Buffer) => {
    one.output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    one.output += chunk.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL printed: ${one.output}`)), 60_000);
    const look = () => {
      const match = /agentstate serving (http:\/\/\S+)/.exec(one.output);
      if (match === null) return;
      clearTimeout(timer);
      resolve(match[1] as string);
    };
    child.stderr?.on('data', look);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`serve (generation ${one.generation}) exited before listening: ${one.output}`));
    });
  });
  return { server: one, url };
}

const tally = {
  attempts: 0,
  retriedRequests: 0,
  retries: { refused: 0, cut: 0, in_progress: 0, busy: 0, conflict: 0, '5xx': 0 } as Record<Reason, number>,
  replayed: 0,
  resumed: 0,
};
let inFlight: { user: number; turn: number }[] = [];
/** Turns answered 200 by each server generation: a kill waits for the current one to be serving turns. */
const answeredBy: number[] = [];
let baseUrl = '';

/** Sends one turn until it answers 200 (retrying with the same key and body), or gives up. */
async function sendTurn(user: User, turn: number): Promise<void> {
  const path = `/v1/sessions/${user.sessionId}/turns`;
  const body = JSON.stringify({ input: user.inputs[turn] });
  const key = `kill-${user.userId}-turn-${turn}`;
  let tries = 0;
  for (;;) {
    if (elapsed() > GIVE_UP_MS) {
      user.failure = `turn ${turn} (${key}) never answered 200 within ${GIVE_UP_MS} ms`;
      return;
    }
    tries += 1;
    tally.attempts += 1;
    const generation = servers.length - 1;
    const at = elapsed();
    const mark = { user: user.index, turn };
    inFlight.push(mark);
    let outcome: string;
    let reason: Reason | null;
    try {
      const response = await fetch(`${baseUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
        body,
        signal: AbortSignal.timeout(30_000),
      });
      const text = await response.text();
      const replayed = response.headers.get('idempotent-replayed') === 'true';
      outcome = `${response.status}${replayed ? ' replayed' : ''} ${text.slice(0, 300)}`;
      if (response.status === 200) {
        const answer = JSON.parse(text) as TurnAnswer;
        user.replies[turn] = answer.reply ?? null;
        user.replayed[turn] = replayed;
        user.resumed[turn] = answer.resumed === true;
        user.answeredFrom[turn] = started + at;
        if (replayed) tally.replayed += 1;
        if (answer.resumed === true) tally.resumed += 1;
        user.attempts.push({ turn, at, generation, outcome: outcome.slice(0, 120) });
        if (tries > 1) tally.retriedRequests += 1;
        answeredBy[generation] = (answeredBy[generation] ?? 0) + 1;
        return;
      }
      if (response.status >= 500) reason = '5xx';
      else if (response.status === 409 && text.includes('still in progress')) reason = 'in_progress';
      else if (response.status === 409 && text.includes('"lease"')) reason = 'busy';
      else if (response.status === 409 && !text.includes('different request')) reason = 'conflict';
      else reason = null;
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      outcome = `error ${cause?.code ?? cause?.message ?? String(error)}`;
      reason = cause?.code === 'ECONNREFUSED' ? 'refused' : 'cut';
      if (reason === 'cut') user.cut[turn] = true;
    } finally {
      inFlight = inFlight.filter((one) => one !== mark);
    }
    user.attempts.push({ turn, at, generation, outcome });
    if (reason === null) {
      user.failure = `turn ${turn} (${key}) answered what no retry mends: ${outcome}`;
      return;
    }
    tally.retries[reason] += 1;
    await sleep(100 + Math.floor(Math.random() * 150));
  }
}

async function converse(user: User): Promise<void> {
  for (let turn = 0; turn < user.inputs.length; turn++) {
    await sendTurn(user, turn);
    if (user.failure !== null) return;
    // A little think time, so the users' turns spread over the kills rather than all end at once.
    await sleep(Math.floor(Math.random() * 150));
  }
}

async function get<T>(path: string): Promise<T> {
  const response = await fetch(`${baseUrl}${path}`);
  const text = await response.text();
  if (response.status !== 200) throw new Error(`GET ${path}: ${response.status} ${text}`);
  return JSON.parse(text) as T;
}

describe('turns with Idempotency-Key while the server is killed and restarted', {
  timeout: GIVE_UP_MS + 60_000,
}, () => {
  it('completes every conversation: no message twice, exactly one booking per user', async () => {
    // The airline answers a booking 250 ms after it is on disk, as a remote one would: a kill then often
    // lands between the booking and the run's commit, the window where a retry could book twice.
    airline = await startAirlineService({ dataDir: join(tmp.dir, 'airline'), responseDelayMs: 250 });
    const first = await serve(0);
    server = first.server;
    baseUrl = first.url;
    const port = Number(new URL(baseUrl).port);

    const users: User[] = [];
    for (let index = 0; index < USERS; index++) {
      const name = passengerOf(index);
      const userId = `killer-${index}`;
      const made = await fetch(`${baseUrl}/v1/sessions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ agent: 'flight_booking', user_id: userId }),
      });
      expect(made.status).toBe(201);
      const session = (await made.json()) as { id: string };
      users.push({
        index,
        userId,
        name,
        inputs: inputsOf(name),
        sessionId: session.id,
        replies: [null, null, null, null],
        replayed: [false, false, false, false],
        resumed: [false, false, false, false],
        cut: [false, false, false, false],
        answeredFrom: [0, 0, 0, 0],
        attempts: [],
        failure: null,
      });
    }

    // The kills: each a random 50-400 ms after the server (first or restarted) answered its first turn, so
    // that it lands while turns run (a restarted server answers none before the dead one's claims lapse);
    // at the latest once only as many turns remain unanswered as kills remain, so that every kill has turns
    // left to land on. Each waits until a request is in flight (the users may be between two attempts).
    const kills: Kill[] = [];
    let finished = 0;
    const remaining = () => USERS * 4 - answeredBy.reduce((sum, n) => sum + n, 0);
    const chaos = (async () => {
      for (let k = 0; k < KILLS; k++) {
        const victim = server as Server;
        const afterMs = 50 + Math.floor(Math.random() * 350);
        let firstAnswer: number | null = null;
        let early = false;
        for (;;) {
          if (finished === USERS) return;
          if (firstAnswer === null && (answeredBy[victim.generation] ?? 0) > 0) firstAnswer = Date.now();
          early = remaining() <= KILLS - k;
          const due = early || (firstAnswer !== null && Date.now() - firstAnswer >= afterMs);
          if (due && inFlight.length > 0) break;
          await sleep(2);
        }
        const kill: Kill = {
          at: elapsed(),
          afterMs,
          early,
          remaining: remaining(),
          generation: victim.generation,
          inFlight: inFlight.map((one) => `user ${one.user} turn ${one.turn}`),
          restartedAt: -1,
        };
        victim.child.kill('SIGKILL');
        await victim.exited;
        kills.push(kill);
        const next = await serve(port);
        server = next.server;
        kill.restartedAt = elapsed();
      }
    })();
    await Promise.all([
      chaos,
      ...users.map((user) =>
        converse(user).finally(() => {
          finished += 1;
        }),
      ),
    ]);

    const ledger = readLedger(join(tmp.dir, 'airline', 'airline-ledger.jsonl'));
    const effects = readEffectLog(join(tmp.dir, 'airline', 'airline-effects.jsonl')) ?? [];
    const problems: string[] = [];
    /** How each turn whose request a kill cut got its 200 in the end. */
    const cutTurns = { replayed: 0, interrupted_run_finished: 0, committed_run_answered: 0, ran_on_retry: 0 };
    for (const user of users) {
      const messages = (await get<{ items: Message[] }>(`/v1/sessions/${user.sessionId}/messages?limit=100`))
        .items;
      const tasks = (
        await get<{ items: { state: string }[] }>(
          `/v1/tasks?session_id=${user.sessionId}&user_id=${user.userId}`,
        )
      ).items;
      const bookings = ledger.filter(
        (entry) => (entry.result as { passenger?: string } | null)?.passenger === user.name,
      );
      const made = effects.filter(
        (line) => line.kind === 'effect' && line.step.startsWith(`book ${user.name} `),
      );
      const expectedRoles = user.inputs.flatMap(() => ['user', 'assistant']);
      const wrong: string[] = [];
      if (user.failure !== null) wrong.push(user.failure);
      if (JSON.stringify(messages.map((m) => m.role)) !== JSON.stringify(expectedRoles))
        wrong.push(`roles ${messages.map((m) => m.role).join(',')}`);
      const userInputs = messages.filter((m) => m.role === 'user').map((m) => m.content);
      if (JSON.stringify(userInputs) !== JSON.stringify(user.inputs))
        wrong.push(`user messages ${JSON.stringify(userInputs)}`);
      const assistant = messages.filter((m) => m.role === 'assistant').map((m) => m.content);
      user.cut.forEach((cut, turn) => {
        if (!cut || user.replies[turn] === null) return;
        const key = `kill-${user.userId}-turn-${turn}`;
        const written = messages.find((m) => m.role === 'user' && m.metadata.request_key === key);
        const writtenAt = written === undefined ? Number.NaN : Date.parse(written.created_at);
        if (user.replayed[turn]) cutTurns.replayed += 1;
        else if (user.resumed[turn]) cutTurns.interrupted_run_finished += 1;
        else if (writtenAt < (user.answeredFrom[turn] ?? 0)) cutTurns.committed_run_answered += 1;
        else cutTurns.ran_on_retry += 1;
      });
      const patterns = repliesOf(user.name);
      assistant.forEach((content, i) => {
        if (!patterns[i]?.test(content)) wrong.push(`assistant message ${i} ${JSON.stringify(content)}`);
        if (user.replies[i] !== null && user.replies[i] !== content)
          wrong.push(
            `turn ${i} answered ${JSON.stringify(user.replies[i])}, the store holds ${JSON.stringify(content)}`,
          );
      });
      if (tasks.length !== 1 || tasks[0]?.state !== 'DONE')
        wrong.push(`tasks ${JSON.stringify(tasks.map((t) => t.state))}`);
      if (bookings.length !== 1) wrong.push(`${bookings.length} bookings in the airline's ledger`);
      if (made.length !== 1) wrong.push(`${made.length} bookings in the airline's effect log`);
      const reference = patterns[3]?.exec(assistant[3] ?? '')?.[1];
      const booked = (bookings[0]?.result as { booking_id?: string } | undefined)?.booking_id;
      if (bookings.length === 1 && reference !== booked)
        wrong.push(`reference ${reference} in the reply, ${booked} in the ledger`);
      if (wrong.length > 0) {
        problems.push(
          [
            `user ${user.index} (${user.userId}, session ${user.sessionId}): ${wrong.join('; ')}`,
            '  messages:',
            ...messages.map((m) => `    ${m.seq} ${m.role}: ${m.content} ${JSON.stringify(m.metadata)}`),
            '  attempts:',
            ...user.attempts.map(
              (a) => `    turn ${a.turn} at ${a.at} ms (server ${a.generation}): ${a.outcome}`,
            ),
            '  bookings:',
            ...bookings.map((b) => `    ${b.key} ${JSON.stringify(b.result)}`),
          ].join('\n'),
        );
      }
    }

    const figures = {
      users: USERS,
      turns: USERS * 4,
      kills: kills.map(
        (k) =>
          `at ${k.at} ms (server ${k.generation}, ${k.early ? `${k.remaining} turns left` : `${k.afterMs} ms after its first answer`}; back at ${k.restartedAt} ms): ${k.inFlight.length} in flight [${k.inFlight.join(', ')}]`,
      ),
      attempts: tally.attempts,
      retried_requests: tally.retriedRequests,
      retries_by_reason: tally.retries,
      idempotent_replayed: tally.replayed,
      resumed: tally.resumed,
      cut_turns_answered_by: cutTurns,
      airline_bookings: ledger.length,
      // Booking requests the airline received: a retried booking turn calls it again with the same key.
      airline_calls: effects.filter((line) => line.kind === 'call').length,
      took_ms: elapsed(),
    };
    console.log(`idempotency-kill figures: ${JSON.stringify(figures, null, 2)}`);
    if (problems.length > 0) {
      const logs = servers
        .map((one) => `--- server ${one.generation}\n${one.output.slice(-4000)}`)
        .join('\n');
      console.log(`${problems.join('\n')}\n${logs}`);
    }
    expect(problems).toEqual([]);
    expect(kills).toHaveLength(KILLS);
    expect(ledger).toHaveLength(USERS);
  });
});
