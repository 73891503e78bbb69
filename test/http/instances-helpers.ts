/** Several `agentstate serve` child processes on one store, and plain JSON calls to them. */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { spawnCli } from '../cli/run.js';

export interface Instance {
  readonly url: string;
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
}

export interface Reply<T> {
  readonly status: number;
  readonly body: T;
}

export const TENANT = 'inst-tenant';
export const API_KEY = `key-${randomBytes(16).toString('hex')}`;
export const JWT_SECRET = randomBytes(32).toString('hex');

function waitForUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let stderr = '';
    const timer = setTimeout(() => reject(new Error(`no URL printed; stderr: ${stderr}`)), 90_000);
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /agentstate serving (http:\/\/[^\s]+)/.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolve(match[1] as string);
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}: ${stderr}`));
    });
  });
}

/** Starts `count` servers on `store`, each with its own data dir under `dir`, all with the same key and secret. */
export async function startInstances(store: string, dir: string, count: number): Promise<Instance[]> {
  const env = {
    AGENTSTATE_API_KEYS: `${TENANT}:${API_KEY}`,
    AGENTSTATE_JWT_SECRET: JWT_SECRET,
    AGENTSTATE_LOG_LEVEL: 'warn',
  };
  const started = Array.from({ length: count }, (_, i) => {
    const dataDir = join(dir, `instance-${i}`);
    mkdirSync(dataDir, { recursive: true });
    const child = spawnCli(
      ['serve', '--host', '127.0.0.1', '--port', '0', '--store', store, '--data-dir', dataDir],
      dir,
      env,
    );
    child.stdout?.resume();
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    return { child, exited, url: waitForUrl(child) };
  });
  const urls = await Promise.allSettled(started.map((s) => s.url));
  const failed = urls.find((u) => u.status === 'rejected');
  if (failed) {
    await stopInstances(started.map((s) => ({ ...s, url: '' })));
    throw (failed as PromiseRejectedResult).reason;
  }
  return started.map((s, i) => ({ ...s, url: (urls[i] as PromiseFulfilledResult<string>).value }));
}

/** SIGTERM to each child still running, then waits for every exit. */
export async function stopInstances(instances: readonly Instance[]): Promise<void> {
  for (const instance of instances) {
    if (instance.child.exitCode === null && instance.child.signalCode === null)
      instance.child.kill('SIGTERM');
  }
  await Promise.all(
    instances.map((instance) =>
      Promise.race([
        instance.exited,
        new Promise<void>((resolve) =>
          setTimeout(() => {
            if (instance.child.exitCode === null) instance.child.kill('SIGKILL');
            resolve();
          }, 15_000),
        ),
      ]),
    ),
  );
}

export async function call<T = Record<string, unknown>>(
  base: string,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<Reply<T>> {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${base}${path}`, {
    method,
    headers,
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  const text = await response.text();
  return { status: response.status, body: (text === '' ? null : JSON.parse(text)) as T };
}

export function randomSuffix(): string {
  return randomBytes(6).toString('hex');
}
