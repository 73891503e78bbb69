/**
 * `agentstate airline` as a real process, shared by a `serve` instance through AGENTSTATE_AIRLINE_URL: the
 * booking a turn makes lands in that airline's ledger, and SIGTERM stops it with exit code 0.
 */
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tallyEffectLog } from '../../src/demo/effects.js';
import { bookingInputs } from '../../src/harness/load/user.js';
import { spawnCli, tempDir } from './run.js';

const tmp = tempDir();
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  tmp.cleanup();
});

function printed(
  child: ChildProcess,
  stream: 'stdout' | 'stderr',
  pattern: RegExp,
): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`nothing matched ${pattern}: ${text}`)), 60_000);
    child[stream]?.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const match = pattern.exec(text);
      if (match) {
        clearTimeout(timer);
        resolve(match);
      }
    });
  });
}

async function post(url: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe('agentstate airline', { timeout: 120_000 }, () => {
  it('serves the demo airline that a serve instance books with, and stops on SIGTERM', async () => {
    const dataDir = join(tmp.dir, 'airline');
    const airline = spawnCli(['airline', '--port', '0', '--data-dir', dataDir], tmp.dir);
    children.push(airline);
    const airlineUrl = (await printed(airline, 'stdout', /demo airline serving (http:\/\/\S+)/))[1] as string;

    const serve = spawnCli(
      ['serve', '--port', '0', '--store', `sqlite:${tmp.dir}/a.db`, '--data-dir', join(tmp.dir, 'data')],
      tmp.dir,
      { AGENTSTATE_AIRLINE_URL: airlineUrl, AGENTSTATE_LOG_LEVEL: 'warn' },
    );
    children.push(serve);
    const url = (await printed(serve, 'stderr', /agentstate serving (http:\/\/\S+)/))[1] as string;
    const session = await post(`${url}/v1/sessions`, { agent: 'flight_booking' });
    expect(session.status).toBe(201);
    let reply = '';
    for (const input of bookingInputs(0, 'Passenger-Shared', 5)) {
      const turn = await post(`${url}/v1/sessions/${session.json.id}/turns`, { input });
      expect(turn.status).toBe(200);
      reply = String(turn.json.reply);
    }
    expect(reply).toMatch(/[Rr]eference/);
    const booked = tallyEffectLog(join(dataDir, 'airline-effects.jsonl'));
    expect(Object.values(booked.steps).map((s) => s.effects)).toEqual([1]);
    expect(booked.redundant_calls).toBe(0);

    const stopped = new Promise<number | null>((resolve) => airline.on('exit', (code) => resolve(code)));
    airline.kill('SIGTERM');
    expect(await stopped).toBe(0);
    serve.kill('SIGTERM');
  });
});
