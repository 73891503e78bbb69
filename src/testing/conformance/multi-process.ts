/**
 * Several OS processes on one store (only for adapters with capabilities.multiProcess and a harness url).
 * Rules: no lost update across processes (optimistic versions), and one idempotency key makes one action
 * however many processes begin it at once.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Ctx } from './context.js';
import { task, uniqueKey } from './fixtures.js';
import type { StoreHarness } from './harness.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
/** From the TypeScript source (this repository's tests) children run under tsx; built, as plain JavaScript. */
const FROM_SOURCE = import.meta.url.endsWith('.ts');

interface Child {
  readonly process: ChildProcess;
  readonly ready: Promise<void>;
  readonly result: Promise<unknown>;
}

/**
 * Spawns `node --import tsx <script> ...args` (from the source; `node <script>.js ...args` when built);
 * `ready` resolves on its first line, `result` is its last.
 */
function child(script: string, argv: string[]): Child {
  const file = fileURLToPath(new URL(FROM_SOURCE ? script : script.replace(/\.ts$/, '.js'), import.meta.url));
  const proc = spawn(process.execPath, [...(FROM_SOURCE ? ['--import', 'tsx'] : []), file, ...argv], {
    cwd: FROM_SOURCE ? ROOT : process.cwd(),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  let markReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  proc.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString('utf8');
    if (out.startsWith('ready\n')) markReady();
  });
  proc.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString('utf8');
  });
  const result = new Promise<unknown>((resolve, reject) => {
    proc.on('error', reject);
    proc.on('exit', (code) => {
      markReady();
      if (code !== 0) return reject(new Error(`${script} exited with ${code}: ${err}`));
      const lines = out.trim().split('\n');
      resolve(JSON.parse(lines.at(-1) ?? 'null'));
    });
  });
  return { process: proc, ready, result };
}

async function runTogether(children: Child[]): Promise<unknown[]> {
  await Promise.all(children.map((c) => c.ready));
  for (const c of children) c.process.stdin?.write('go\n');
  return Promise.all(children.map((c) => c.result));
}

export function multiProcessTests(t: Ctx, harness: StoreHarness): void {
  describe('multiple processes', () => {
    it('two processes x 200 read-modify-write increments lose no update', {
      timeout: 120_000,
    }, async (ctx) => {
      if (!t.store.capabilities.multiProcess || harness.url === undefined) return ctx.skip();
      const url = harness.url;
      const created = await t.store.createTask(t.scope, { type: 'counter', data: { counter: 0 } });
      const argv = [url, t.scope.tenant_id, t.scope.user_id, created.id, '200'];
      const results = (await runTogether([
        child('./child/increment.ts', argv),
        child('./child/increment.ts', argv),
      ])) as { done: number; conflicts: number }[];
      expect(results.map((r) => r.done)).toEqual([200, 200]);
      const final = await t.store.getTask(t.scope, created.id);
      expect(final?.data.counter).toBe(400);
      expect(final?.version).toBe(401);
    });

    it('two processes beginning the same keys at once make one action per key', {
      timeout: 120_000,
    }, async (ctx) => {
      if (!t.store.capabilities.multiProcess || harness.url === undefined) return ctx.skip();
      const url = harness.url;
      const k = await task(t.store, t.scope);
      const prefix = uniqueKey('mp');
      const argv = [url, t.scope.tenant_id, t.scope.user_id, k.id, prefix, '50'];
      const results = (await runTogether([
        child('./child/begin-actions.ts', argv),
        child('./child/begin-actions.ts', argv),
      ])) as { ids: string[]; created: number }[];
      expect(results[0]?.ids).toEqual(results[1]?.ids);
      expect((results[0]?.created ?? 0) + (results[1]?.created ?? 0)).toBe(50);
      const listed = await t.store.listActions(t.scope, { task_id: k.id, limit: 500 });
      expect(listed.items).toHaveLength(50);
      expect(new Set(listed.items.map((a) => a.idempotency_key)).size).toBe(50);
    });
  });
}
