/**
 * `agentstate serve` as a real process: it prints where it listens, serves, refuses what it must, and on
 * SIGTERM finishes the request in flight before it exits 0.
 */
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnBuiltCli, spawnCli, tempDir } from './run.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

function waitForUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let stderr = '';
    const timer = setTimeout(() => reject(new Error(`no URL printed; stderr: ${stderr}`)), 60_000);
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /agentstate serving (http:\/\/[^\s]+)/.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolve(match[1] as string);
      }
    });
    child.on('exit', (code) => reject(new Error(`serve exited with ${code}: ${stderr}`)));
  });
}

function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.on('exit', (code) => resolve(code)));
}

/** Sends a POST whose body arrives in two parts, `pause` ms apart; resolves with the raw response. */
function slowPost(url: string, path: string, body: string, onHalf: () => void): Promise<string> {
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

describe('agentstate serve', { timeout: 120_000 }, () => {
  it('serves on loopback, and on SIGTERM finishes the request in flight, then exits 0', async () => {
    const child = spawnCli(['serve', '--port', '0', '--store', `sqlite:${tmp.dir}/serve.db`], tmp.dir);
    const exited = exitOf(child);
    let stdout = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    const url = await waitForUrl(child);
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    const made = await fetch(`${url}/v1/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user_id: 'ada' }),
    });
    expect(made.status).toBe(201);
    const response = await slowPost(
      url,
      '/v1/sessions',
      JSON.stringify({ user_id: 'late', context: { n: 1 } }),
      () => child.kill('SIGTERM'),
    );
    expect(response).toMatch(/^HTTP\/1\.1 201/);
    expect(await exited).toBe(0);
    const logs = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { msg?: string; reqId?: string });
    expect(logs.some((l) => l.msg?.includes('no API keys configured'))).toBe(true);
    expect(logs.some((l) => typeof l.reqId === 'string')).toBe(true);
    expect(logs.at(-1)?.msg).toBe('stopped');
  });

  // The built CLI under plain node (tsx would open process.stdout itself), with turn threads (auto: they open
  // process.stdout in the main thread) and without (nothing else opens it: fd 1 stays blocking unless the log
  // stream opens it).
  it.each([['auto'], ['0']])(
    'exits on SIGTERM even when nothing reads its log output (a stalled stdout pipe), --turn-threads %s',
    async (threads) => {
      const child = spawnBuiltCli(
        [
          'serve',
          '--port',
          '0',
          '--turn-threads',
          threads,
          '--store',
          `sqlite:${tmp.dir}/stalled-${threads}.db`,
        ],
        tmp.dir,
      );
      const exited = exitOf(child);
      const url = await waitForUrl(child);
      // stdout is a pipe this test never reads: enough requests to fill it many times over (two lines each).
      child.stdout?.pause();
      for (let i = 0; i < 1500; i += 1) expect((await fetch(`${url}/healthz`)).status).toBe(200);
      child.kill('SIGTERM');
      // What this tells apart is an exit from a server that never exits (stuck writing to the full pipe).
      // It exits about 2.1 s after the signal here; 20 s holds on a loaded machine.
      const code = await Promise.race([
        exited,
        new Promise<string>((r) => setTimeout(() => r('still running'), 20_000)),
      ]);
      if (code === 'still running') child.kill('SIGKILL');
      expect(code).toBe(0);
    },
  );

  it('starts without warnings on stderr, and refuses an unknown log level in one sentence', async () => {
    const child = spawnCli(['serve', '--port', '0', '--store', `sqlite:${tmp.dir}/quiet.db`], tmp.dir);
    const exited = exitOf(child);
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    await waitForUrl(child);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stderr).not.toMatch(/Warning|DEP\d/);

    const refused = spawnCli(['serve', '--port', '0', '--store', `sqlite:${tmp.dir}/quiet.db`], tmp.dir, {
      AGENTSTATE_LOG_LEVEL: 'verbose',
    });
    let err = '';
    refused.stderr?.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    expect(await exitOf(refused)).toBe(1);
    expect(err.trim()).toBe(
      'agentstate: AGENTSTATE_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"',
    );
  });

  it('--agents adds the agents a module exports', async () => {
    const agentsFile = join(tmp.dir, 'my-agents.ts');
    const builtin = join(dirname(fileURLToPath(import.meta.url)), '../../src/agents/index.ts');
    writeFileSync(
      agentsFile,
      `import { flightBookingAgent } from ${JSON.stringify(builtin)};\nexport const agents = [{ ...flightBookingAgent, name: 'travel' }];\n`,
    );
    const child = spawnCli(
      ['serve', '--port', '0', '--store', `sqlite:${tmp.dir}/agents.db`, '--agents', agentsFile],
      tmp.dir,
    );
    const exited = exitOf(child);
    const url = await waitForUrl(child);
    const post = (agent: string) =>
      fetch(`${url}/v1/sessions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ agent }),
      });
    expect((await post('travel')).status).toBe(201);
    expect((await post('flight_booking')).status).toBe(201);
    expect((await post('nope')).status).toBe(400);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('with API keys: requires a token, and refuses to start without a JWT secret', async () => {
    const key = 'acme-key-0123456789abcdef';
    const refused = spawnCli(['serve', '--port', '0', '--store', `sqlite:${tmp.dir}/keys.db`], tmp.dir, {
      AGENTSTATE_API_KEYS: `acme:${key}`,
    });
    let err = '';
    refused.stderr?.on('data', (c: Buffer) => {
      err += c.toString();
    });
    expect(await exitOf(refused)).toBe(1);
    expect(err).toContain('JWT secret');

    const child = spawnCli(['serve', '--port', '0', '--store', `sqlite:${tmp.dir}/keys.db`], tmp.dir, {
      AGENTSTATE_API_KEYS: `acme:${key}`,
      AGENTSTATE_JWT_SECRET: 'k'.repeat(40),
    });
    const exited = exitOf(child);
    const url = await waitForUrl(child);
    expect((await fetch(`${url}/v1/sessions`)).status).toBe(401);
    const minted = await fetch(`${url}/v1/tokens`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ user_id: 'ada', ttl_seconds: 60 }),
    });
    const { token } = (await minted.json()) as { token: string };
    const list = await fetch(`${url}/v1/sessions`, { headers: { authorization: `Bearer ${token}` } });
    expect(list.status).toBe(200);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});
