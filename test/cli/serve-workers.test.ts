/**
 * `agentstate serve --workers 2` as real processes: one port, one banner, metrics summed over the workers,
 * a worker killed with SIGKILL started again while the others keep serving, and SIGTERM stopping them all.
 */
import { execFileSync, spawn } from 'node:child_process';
import { request } from 'node:http';
import { connect } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { MAIN, spawnCli, TSX, tempDir } from './run.js';

function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith('AGENTSTATE_')) delete env[key];
  return { ...env, AGENTSTATE_LOG_LEVEL: 'warn' };
}

const tmp = tempDir();
afterAll(() => tmp.cleanup());

/** The worker processes of a primary (its other children, like esbuild's service under tsx, left out). */
function childrenOf(pid: number): number[] {
  try {
    return execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .filter((line) => line.includes(' serve '))
      .map((line) => Number.parseInt(line.trim(), 10))
      .filter((n) => n > 0);
  } catch {
    return [];
  }
}

/** One request on a connection of its own, so that the cluster may hand it to any worker. */
function call(
  url: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const text = body === undefined ? undefined : JSON.stringify(body);
    const req = request(`${url}${path}`, {
      method,
      agent: false,
      headers: { ...headers, ...(text === undefined ? {} : { 'content-type': 'application/json' }) },
    });
    req.on('response', (res) => {
      let out = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        out += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: out }));
    });
    req.on('error', reject);
    req.end(text);
  });
}

async function until<T>(probe: () => T | Promise<T>, ok: (value: T) => boolean, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out; last value ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('agentstate serve --workers', { timeout: 120_000 }, () => {
  it('serves from 2 processes on one port, sums their metrics, restarts a killed worker, stops on SIGTERM', async () => {
    const child = spawnCli(
      [
        'serve',
        '--workers',
        '2',
        '--port',
        '0',
        '--store',
        `sqlite:${tmp.dir}/w.db`,
        '--data-dir',
        `${tmp.dir}/data`,
      ],
      tmp.dir,
      { AGENTSTATE_LOG_LEVEL: 'warn' },
    );
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const url = await until(
      () => /agentstate serving (http:\/\/\S+)/.exec(stderr)?.[1] ?? '',
      (u) => u !== '',
    );
    expect(stderr.match(/agentstate serving/g)).toHaveLength(1);
    expect(stderr).toMatch(/workers: 2 processes on one port/);
    const primary = child.pid as number;
    const workers = await until(
      () => childrenOf(primary),
      (pids) => pids.length === 2,
    );

    for (let i = 0; i < 6; i++) {
      const made = await call(url, 'POST', '/v1/sessions', { agent: 'flight_booking' });
      expect(made.status).toBe(201);
    }
    // Both workers report (a scrape leaves out a worker that has not answered within 1.5 s, which a loaded
    // machine's worker may not have: scraped again until both do).
    const metrics = await until(
      () => call(url, 'GET', '/metrics'),
      (scraped) => /^agentstate_cluster_workers_reporting 2$/m.test(scraped.text),
    );
    expect(metrics.status).toBe(200);
    expect(metrics.text).toMatch(/^agentstate_sessions_created_total\{agent="flight_booking"\} 6$/m);
    // A scraper asking for OpenMetrics gets the same sums in that format (the primary renders it).
    const open = await call(url, 'GET', '/metrics', undefined, { accept: 'application/openmetrics-text' });
    expect(open.text).toMatch(/^# TYPE agentstate_sessions_created counter$/m);
    expect(open.text).toMatch(/^agentstate_sessions_created_total\{agent="flight_booking"\} 6$/m);
    expect(open.text.endsWith('# EOF\n')).toBe(true);

    process.kill(workers[0] as number, 'SIGKILL');
    await until(
      () => stderr,
      (text) => /worker \d exited with SIGKILL; starting it again/.test(text),
    );
    // While the worker is away (it died within 10 s of its start, so it comes back after 1 s) and while its
    // replacement starts, every scrape answers at once with the workers that serve, and says how many.
    const reportingOf = (text: string) =>
      Number(/^agentstate_cluster_workers_reporting (\d+)$/m.exec(text)?.[1] ?? Number.NaN);
    const seen: number[] = [];
    await until(
      async () => {
        const during = Date.now();
        const scraped = await call(url, 'GET', '/metrics');
        expect(scraped.status).toBe(200);
        // A scrape took 8-150 ms here; 3 s (20 times that) holds on a loaded machine and still fails a
        // scrape that waits for the absent workers one after another (1.5 s each) or for its 5 s ask timeout.
        expect(Date.now() - during).toBeLessThan(3_000);
        expect(scraped.text).toMatch(/^agentstate_cluster_workers 2$/m);
        seen.push(reportingOf(scraped.text));
        return seen.at(-1);
      },
      (reporting) => reporting === 2,
    );
    expect(seen[0]).toBe(1);
    const again = await until(
      () => childrenOf(primary),
      (pids) => pids.length === 2 && !pids.includes(workers[0] as number),
    );
    expect(again).toContain(workers[1]);
    for (let i = 0; i < 4; i++) {
      expect((await call(url, 'POST', '/v1/sessions', { agent: 'flight_booking' })).status).toBe(201);
    }
    const listed = await call(url, 'GET', '/v1/sessions?limit=50');
    expect((JSON.parse(listed.text) as { items: unknown[] }).items).toHaveLength(10);

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(childrenOf(primary)).toEqual([]);
    for (const pid of again) expect(() => process.kill(pid, 0)).toThrow();
  });

  it('fails at once, in one sentence, when a worker cannot start', async () => {
    const child = spawnCli(
      [
        'serve',
        '--workers',
        '2',
        '--port',
        '0',
        '--store',
        `sqlite:${tmp.dir}/f.db`,
        '--agents',
        `${tmp.dir}/missing.js`,
      ],
      tmp.dir,
    );
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    expect(code).not.toBe(0);
    expect(stderr).toMatch(/cannot load --agents/);
    expect(stderr).toMatch(/worker \d exited with 1 before it listened/);
    // At the first worker's failure: not started again, and not at the start timeout (what a time bound
    // stood for here; the whole run takes 12 s on this machine, mostly three processes loading TypeScript).
    expect(stderr).not.toMatch(/starting it again|did not all start/);
    expect(stderr.match(/before it listened/g)).toHaveLength(1);
  });

  it('Ctrl-C to the whole process group lets a request in flight finish, then exits 0', async () => {
    const child = spawn(
      process.execPath,
      ['--import', TSX, MAIN, 'serve', '--workers', '2', '--port', '0', '--store', `sqlite:${tmp.dir}/g.db`],
      { cwd: tmp.dir, detached: true, stdio: ['ignore', 'ignore', 'pipe'], env: cleanEnv() },
    );
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const url = await until(
      () => /agentstate serving (http:\/\/\S+)/.exec(stderr)?.[1] ?? '',
      (u) => u !== '',
    );
    const { hostname, port } = new URL(url);
    const body = JSON.stringify({ agent: 'flight_booking' });
    const answer = new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), hostname, () => {
        socket.write(
          `POST /v1/sessions HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body.slice(0, 5)}`,
        );
        setTimeout(() => {
          process.kill(-(child.pid as number), 'SIGINT');
          setTimeout(() => socket.write(body.slice(5)), 500);
        }, 1_000); // the server has read the head by then, even on a loaded machine
      });
      let response = '';
      socket.on('data', (chunk) => {
        response += chunk.toString();
      });
      socket.on('end', () => resolve(response));
      socket.on('error', reject);
    });
    expect(await answer).toMatch(/^HTTP\/1\.1 201/);
    expect(await exited).toBe(0);
  });

  it('refuses a number of workers that is not a whole number from 1 to 64, in one sentence', async () => {
    const child = spawnCli(['serve', '--workers', 'two', '--port', '0'], tmp.dir);
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    expect(code).not.toBe(0);
    expect(stderr).toMatch(/--workers must be a whole number from 1 to 64, got "two"/);
  });
});
