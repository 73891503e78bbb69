import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startAirlineService } from '../../src/demo/airline/server.js';
import { createAirlineBookTool } from '../../src/demo/airline/tool.js';
import { readLedger } from '../../src/demo/ledger.js';
import { httpRequest, keepAliveAgent } from '../../src/net/http-request.js';
import { type ToolContext, ToolError } from '../../src/runtime/tool.js';

/** Lines of the airline's idempotency index per key (1 each: a key books once). */
function perKey(path: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const entry of readLedger(path)) counts[entry.key] = (counts[entry.key] ?? 0) + 1;
  return counts;
}

const trip = {
  origin: 'LHR',
  destination: 'NRT',
  date: '2027-03-01',
  cabin_class: 'economy',
  passenger_name: 'Grace Hopper',
} as const;
const ctx = (idempotencyKey: string): ToolContext => ({
  idempotencyKey,
  signal: new AbortController().signal,
  attempt: 1,
});
const newKey = () => `act-${Math.random().toString(36).slice(2)}`;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'airline-tool-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('airline.book tool', () => {
  it('books once per key, and lookup finds it (or not)', async () => {
    const airline = await startAirlineService({ dataDir: dir });
    try {
      const tool = createAirlineBookTool({ baseUrl: airline.url });
      const key = newKey();
      expect(await tool.lookup?.(key)).toEqual({ found: false });
      const first = await tool.execute(trip, ctx(key));
      const second = await tool.execute(trip, { ...ctx(key), attempt: 2 });
      expect(second).toEqual(first);
      expect(await tool.lookup?.(key)).toEqual({ found: true, result: first });
      expect(perKey(airline.ledgerPath)).toEqual({ [key]: 1 });
    } finally {
      await airline.close();
    }
  });

  it('rejects bad input and key reuse with a certain ToolError', async () => {
    const airline = await startAirlineService({ dataDir: dir });
    try {
      const tool = createAirlineBookTool({ baseUrl: airline.url });
      const key = newKey();
      await tool.execute(trip, ctx(key));
      const reuse = tool.execute({ ...trip, cabin_class: 'first' }, ctx(key));
      await expect(reuse).rejects.toMatchObject({ name: 'ToolError', kind: 'rejected', code: 'conflict' });
      const bad = tool.execute({ ...trip, date: '2027-13-01' }, ctx(newKey()));
      await expect(bad).rejects.toMatchObject({ kind: 'rejected', code: 'invalid_request' });
      expect(tool.params.safeParse({ ...trip, origin: 'LHRX' }).success).toBe(false);
    } finally {
      await airline.close();
    }
  });

  it('treats a time-out as an unknown outcome that lookup then resolves', async () => {
    const airline = await startAirlineService({ dataDir: dir, responseDelayMs: 400 });
    try {
      const tool = createAirlineBookTool({ baseUrl: airline.url, timeoutMs: 100 });
      const key = newKey();
      const error = await tool.execute(trip, ctx(key)).catch((e: unknown) => e);
      expect(error).not.toBeInstanceOf(ToolError);
      expect(String(error)).toContain('no answer within 100 ms');
      await new Promise((resolve) => setTimeout(resolve, 450));
      const found = await tool.lookup?.(key);
      expect(found).toMatchObject({ found: true, result: { origin: 'LHR', status: 'CONFIRMED' } });
      expect(perKey(airline.ledgerPath)).toEqual({ [key]: 1 });
    } finally {
      await airline.close();
    }
  });

  it('keeps the connection of a client that books again (no new TCP connection per booking)', async () => {
    const airline = await startAirlineService({ dataDir: dir });
    const agent = keepAliveAgent(500);
    let connections = 0;
    const connect = agent.createConnection.bind(agent);
    agent.createConnection = (...args: Parameters<typeof connect>) => {
      connections++;
      return connect(...args);
    };
    try {
      for (const key of [newKey(), newKey(), newKey()]) {
        const answer = await httpRequest(`${airline.url}/bookings`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': key },
          body: JSON.stringify({
            origin: 'LHR',
            destination: 'NRT',
            date: '2027-03-01',
            cabin: 'economy',
            passenger: 'Grace Hopper',
          }),
          timeoutMs: 5_000,
          agent,
        });
        expect(answer.status).toBe(201);
        // Node's agent keeps a connection only when the announced time-out leaves it more than a second.
        expect(answer.headers['keep-alive']).toMatch(/^timeout=([2-9]|\d\d)/);
      }
      expect(connections).toBe(1);
    } finally {
      agent.destroy();
      await airline.close();
    }
  });

  it('says retryable when the airline is down, and lookup is ambiguous', async () => {
    const airline = await startAirlineService({ dataDir: dir });
    const url = airline.url;
    await airline.close();
    const tool = createAirlineBookTool({ baseUrl: url, timeoutMs: 1000 });
    await expect(tool.execute(trip, ctx(newKey()))).rejects.toMatchObject({ kind: 'retryable' });
    expect(await tool.lookup?.(newKey())).toMatchObject({ found: 'ambiguous' });
  });
});

function startAirlineProcess(dataDir: string): Promise<{ child: ChildProcess; url: string }> {
  const main = join(import.meta.dirname, '../../src/demo/airline/main.ts');
  const child = spawn(process.execPath, ['--import', 'tsx', main, '--port', '0', '--data', dataDir], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`airline exited with ${code}`)));
    createInterface({ input: child.stdout! }).once('line', (line) => {
      resolve({ child, url: (JSON.parse(line) as { url: string }).url });
    });
  });
}

describe('airline as its own process', () => {
  it('survives a SIGKILL of itself with its ledger: the restarted process replays the booking', async () => {
    const first = await startAirlineProcess(dir);
    const key = newKey();
    const tool = createAirlineBookTool({ baseUrl: first.url });
    const booking = await tool.execute(trip, ctx(key));
    const exited = new Promise((resolve) => first.child.once('exit', resolve));
    first.child.kill('SIGKILL');
    await exited;

    const second = await startAirlineProcess(dir);
    try {
      const again = createAirlineBookTool({ baseUrl: second.url });
      expect(await again.lookup?.(key)).toEqual({ found: true, result: booking });
      expect(await again.execute(trip, ctx(key))).toEqual(booking);
      expect(perKey(join(dir, 'airline-ledger.jsonl'))).toEqual({ [key]: 1 });
    } finally {
      second.child.kill('SIGTERM');
    }
  });
});
