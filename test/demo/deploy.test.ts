import { existsSync, mkdtempSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { JsonValue } from '../../src/core/json.js';
import { countSideEffects } from '../../src/demo/ledger.js';
import { createDemoTools } from '../../src/demo/tools.js';
import type { ToolContext, ToolRegistry } from '../../src/runtime/tool.js';

const ctx = (idempotencyKey: string): ToolContext => ({
  idempotencyKey,
  signal: new AbortController().signal,
  attempt: 1,
});
const app = { app: 'hello-web' };

let dirs: string[] = [];
function workspace(): string {
  const dir = mkdtempSync(join(tmpdir(), 'deploy-ws-'));
  dirs.push(dir);
  return dir;
}
beforeEach(() => {
  dirs = [];
});
afterEach(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function call(tools: ToolRegistry, name: string, params: JsonValue, key: string): Promise<JsonValue> {
  const tool = tools.get(name);
  if (tool === undefined) throw new Error(`no tool ${name}`);
  return tool.execute(tool.params.parse(params), ctx(key));
}

/** Runs the five steps with keys `<prefix>-<n>`; answers their results in order. */
async function pipeline(tools: ToolRegistry, prefix: string): Promise<JsonValue[]> {
  const steps: [string, JsonValue][] = [
    ['deploy.plan', { ...app, version: '1.4.2', greeting: 'Bonjour' }],
    ['deploy.write_files', app],
    ['deploy.run_tests', app],
    ['deploy.build', app],
    ['deploy.deploy', app],
  ];
  const results: JsonValue[] = [];
  for (const [i, [name, params]] of steps.entries())
    results.push(await call(tools, name, params, `${prefix}-${i}`));
  return results;
}

describe('deploy tools', () => {
  it('plan, write, test, build and deploy for real in the workspace', async () => {
    const dir = workspace();
    const tools = createDemoTools({ workspaceDir: dir });
    expect(tools.names()).toEqual([
      'deploy.build',
      'deploy.deploy',
      'deploy.plan',
      'deploy.run_tests',
      'deploy.write_files',
    ]);
    const [plan, written, tested, built, deployed] = (await pipeline(tools, 'k')) as Record<
      string,
      JsonValue
    >[];
    expect(plan).toMatchObject({ plan: 'apps/hello-web/plan.json', version: '1.4.2' });
    expect(JSON.parse(readFileSync(join(dir, 'apps/hello-web/plan.json'), 'utf8'))).toMatchObject({
      greeting: 'Bonjour',
    });
    expect(written?.files).toHaveLength(2);
    expect(tested).toMatchObject({ ok: true, tests: 2, passed: 2, failed: 0 });
    const artifact = join(dir, built?.artifact as string);
    expect(readFileSync(artifact, 'utf8')).toContain('Bonjour');
    expect(deployed?.sha256).toBe(built?.sha256);
    const release = deployed?.release as string;
    expect(readlinkSync(join(dir, 'releases/hello-web/current'))).toBe(release.split('/').pop());
    expect(existsSync(join(dir, release, 'hello-web-1.4.2.bundle.json'))).toBe(true);
    expect(countSideEffects(join(dir, 'deploy-ledger.jsonl'))).toEqual({
      'k-0': 1,
      'k-1': 1,
      'k-2': 1,
      'k-3': 1,
      'k-4': 1,
    });
  });

  it('does each side effect once per key: a second call answers the recorded result without redoing it', async () => {
    const dir = workspace();
    const tools = createDemoTools({ workspaceDir: dir });
    const first = await pipeline(tools, 'once');
    rmSync(join(dir, 'apps'), { recursive: true });
    rmSync(join(dir, 'releases'), { recursive: true });
    const second = await pipeline(tools, 'once');
    expect(second).toEqual(first);
    expect(existsSync(join(dir, 'apps'))).toBe(false);
    expect(existsSync(join(dir, 'releases'))).toBe(false);
    expect(Object.values(countSideEffects(join(dir, 'deploy-ledger.jsonl')))).toEqual([1, 1, 1, 1, 1]);
  });

  it('lookup finds what a key did and answers not found for a key never used', async () => {
    const tools = createDemoTools({ workspaceDir: workspace() });
    const plan = tools.get('deploy.plan')!;
    expect(await plan.lookup?.('never')).toEqual({ found: false });
    const result = await call(tools, 'deploy.plan', { ...app, version: '0.1.0' }, 'p1');
    expect(await plan.lookup?.('p1')).toEqual({ found: true, result });
    expect(await tools.get('deploy.build')!.lookup?.('p1')).toMatchObject({ found: 'ambiguous' });
  });

  it('refuses a key reused with other params', async () => {
    const tools = createDemoTools({ workspaceDir: workspace() });
    await call(tools, 'deploy.plan', { ...app, version: '0.1.0' }, 'p1');
    const reuse = call(tools, 'deploy.plan', { ...app, version: '0.2.0' }, 'p1');
    await expect(reuse).rejects.toMatchObject({ name: 'ToolError', kind: 'rejected', code: 'conflict' });
  });

  it('gives identical results in two workspaces with other keys (deterministic outputs)', async () => {
    const a = await pipeline(createDemoTools({ workspaceDir: workspace() }), 'a');
    const b = await pipeline(createDemoTools({ workspaceDir: workspace() }), 'b');
    expect(b).toEqual(a);
  });
});

describe('deploy tools: failures', () => {
  it('records failing tests as ok: false, and build then refuses', async () => {
    const tools = createDemoTools({ workspaceDir: workspace() });
    await call(tools, 'deploy.plan', { ...app, version: '1.0.0' }, 'f0');
    const files = {
      'greet.mjs': 'export const greet = () => "hi";\n',
      'greet.test.mjs': [
        "import assert from 'node:assert/strict';",
        "import { test } from 'node:test';",
        "import { greet } from './greet.mjs';",
        "test('passes', () => assert.equal(greet(), 'hi'));",
        "test('fails', () => assert.equal(greet(), 'bye'));",
        '',
      ].join('\n'),
    };
    await call(tools, 'deploy.write_files', { ...app, files }, 'f1');
    expect(await call(tools, 'deploy.run_tests', app, 'f2')).toMatchObject({
      ok: false,
      tests: 2,
      passed: 1,
      failed: 1,
    });
    await expect(call(tools, 'deploy.build', app, 'f3')).rejects.toMatchObject({ kind: 'rejected' });
    expect(countSideEffects(join(dirs[0]!, 'deploy-ledger.jsonl'))).toEqual({ f0: 1, f1: 1, f2: 1 });
  });

  it('refuses steps out of order and invalid params', async () => {
    const tools = createDemoTools({ workspaceDir: workspace() });
    await expect(call(tools, 'deploy.write_files', app, 'x')).rejects.toThrow(/run deploy.plan first/);
    await expect(call(tools, 'deploy.deploy', app, 'y')).rejects.toThrow(/run deploy.plan first/);
    expect(tools.get('deploy.plan')!.params.safeParse({ app: '../etc', version: '1.0.0' }).success).toBe(
      false,
    );
    expect(tools.get('deploy.plan')!.params.safeParse({ app: 'ok', version: 'latest' }).success).toBe(false);
    expect(
      tools.get('deploy.write_files')!.params.safeParse({ app: 'ok', files: { '../x.mjs': '' } }).success,
    ).toBe(false);
  });
});
