/**
 * The trip example in real child processes over one SQLite file: killed with SIGKILL in the middle of its
 * flight search, resumed by a new process, it reaches the same confirmation and, once confirmed, the same
 * final state as a run that was never interrupted.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AgentStateSaver } from '../../src/adapters/langgraph/index.js';

const dir = mkdtempSync(join(tmpdir(), 'agentstate-trip-'));
const db = join(dir, 'trip.db');
const main = join(import.meta.dirname, 'main.ts');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Event {
  readonly event: string;
  readonly [key: string]: unknown;
}

function start(
  args: string[],
  delayMs = 0,
): { child: ChildProcess; events: Event[]; exit: Promise<number | null> } {
  const child = spawn(process.execPath, ['--import', 'tsx', main, db, ...args], {
    env: { ...process.env, TRIP_SEARCH_DELAY_MS: String(delayMs) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const events: Event[] = [];
  let buffer = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    const lines = buffer.split('\n');
    buffer = lines.pop() ?? '';
    for (const line of lines) if (line.trim() !== '') events.push(JSON.parse(line) as Event);
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const exit = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      if (code !== 0 && code !== null) process.stderr.write(stderr);
      resolve(code);
    }),
  );
  return { child, events, exit };
}

async function step(args: string[]): Promise<Event[]> {
  const { events, exit } = start(args);
  expect(await exit).toBe(0);
  return events;
}

async function until(events: Event[], name: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!events.some((e) => e.event === name)) {
    if (Date.now() > deadline) throw new Error(`no ${name} event`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('trip example over SQLite', () => {
  it('resumes after SIGKILL mid-tool to the same final state as an uninterrupted run', async () => {
    const first = await step(['reference', 'start']);
    expect(first.at(-1)).toEqual({ event: 'interrupt', value: { question: 'Book NH-106?' } });
    const reference = (await step(['reference', 'answer', 'yes'])).at(-1);
    expect(reference?.event).toBe('done');
    expect(reference?.state).toMatchObject({ booking: 'Booked NH-106, reference PNR-7Q2' });

    const killed = start(['crashy', 'start'], 60_000);
    await until(killed.events, 'searching');
    killed.child.kill('SIGKILL');
    expect(await killed.exit).toBeNull();
    expect(killed.events.some((e) => e.event === 'interrupt')).toBe(false);

    const resumed = await step(['crashy', 'resume']);
    expect(resumed.map((e) => e.event)).toEqual(['searching', 'interrupt']);
    const done = (await step(['crashy', 'answer', 'yes'])).at(-1);
    expect(done).toEqual(reference);

    // The history is in the store, scoped to the example's tenant and user.
    const saver = await AgentStateSaver.open(`sqlite:${db}`, { tenant_id: 'demo', user_id: 'traveller' });
    const other = new AgentStateSaver({ store: saver.store, tenant_id: 'demo', user_id: 'someone-else' });
    try {
      const history = [];
      for await (const tuple of saver.list({ configurable: { thread_id: 'crashy' } })) history.push(tuple);
      expect(history.length).toBeGreaterThan(4);
      expect(await other.getTuple({ configurable: { thread_id: 'crashy' } })).toBeUndefined();
    } finally {
      await saver.close();
    }
  }, 120_000);
});
