import { existsSync, mkdtempSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { JsonValue } from '../../src/core/json.js';
import { effectsPerStep, tallyEffectLog } from '../../src/demo/effects.js';
import { createDemoTools } from '../../src/demo/tools.js';
import type { ToolContext, ToolRegistry } from '../../src/runtime/tool.js';

const ctx = (idempotencyKey: string): ToolContext => ({
  idempotencyKey,
  signal: new AbortController().signal,
  attempt: 1,
});
const target = { service: 'hello-web', environment: 'staging', version: '1.4.2' } as const;

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

/** Runs the five steps as deploy_pipeline does (each gets the previous result), with keys `<prefix>-<n>`. */
async function pipeline(tools: ToolRegistry, prefix: string): Promise<JsonValue[]> {
  const plan = await call(tools, 'deploy.plan', target, `${prefix}-0`);
  const files = await call(tools, 'deploy.write_files', { ...target, plan }, `${prefix}-1`);
  const tests = await call(tools, 'deploy.run_tests', { ...target, files }, `${prefix}-2`);
  const build = await call(tools, 'deploy.build', { ...target, tests }, `${prefix}-3`);
  const deployed = await call(tools, 'deploy.deploy', { ...target, build }, `${prefix}-4`);
  return [plan, files, tests, build, deployed];
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
    expect(plan).toMatchObject({ plan: 'apps/hello-web/staging/plan.json', version: '1.4.2' });
    expect(JSON.parse(readFileSync(join(dir, 'apps/hello-web/staging/plan.json'), 'utf8'))).toMatchObject({
      greeting: 'Hello from hello-web (staging)',
    });
    expect(written?.files).toHaveLength(2);
    expect(tested).toMatchObject({ ok: true, tests: 2, passed: 2, failed: 0 });
    const artifact = join(dir, built?.artifact as string);
    expect(readFileSync(artifact, 'utf8')).toContain('Hello from hello-web (staging)');
    expect(deployed?.sha256).toBe(built?.sha256);
    const release = deployed?.release as string;
    expect(readlinkSync(join(dir, 'releases/hello-web/staging/current'))).toBe(release.split('/').pop());
    expect(deployed?.url).toBe(`https://staging.demo.invalid/hello-web/${release.split('/').pop()}/`);
    expect(existsSync(join(dir, release, 'hello-web-1.4.2.bundle.json'))).toBe(true);
    const effects = tallyEffectLog(join(dir, 'deploy-effects.jsonl'));
    expect(Object.keys(effects.steps)).toEqual(
      ['plan', 'write_files', 'run_tests', 'build', 'deploy'].map(
        (step) => `deploy.${step} hello-web/staging@1.4.2`,
      ),
    );
    expect(Object.values(effects.steps).map((s) => [s.effects, s.keys])).toEqual(
      [0, 1, 2, 3, 4].map((n) => [1, [`k-${n}`]]),
    );
    expect(effects).toMatchObject({ calls: 5, effects: 5, duplicate_effects: 0, redundant_calls: 0 });
  });

  it('does not deduplicate: a second call with the same key does the work again, and its log shows it', async () => {
    const dir = workspace();
    const tools = createDemoTools({ workspaceDir: dir });
    const first = await pipeline(tools, 'twice');
    rmSync(join(dir, 'apps'), { recursive: true });
    rmSync(join(dir, 'releases'), { recursive: true });
    const second = await pipeline(tools, 'twice');
    expect(second).toEqual(first);
    expect(existsSync(join(dir, 'apps/hello-web/staging/plan.json'))).toBe(true);
    expect(existsSync(join(dir, 'releases/hello-web/staging/current'))).toBe(true);
    expect(Object.values(effectsPerStep(join(dir, 'deploy-effects.jsonl')))).toEqual([2, 2, 2, 2, 2]);
    const tally = tallyEffectLog(join(dir, 'deploy-effects.jsonl'));
    expect(tally).toMatchObject({ duplicate_effects: 5, redundant_calls: 5 });
  });

  it('lookup finds what a key did and answers not found for a key never used', async () => {
    const tools = createDemoTools({ workspaceDir: workspace() });
    const plan = tools.get('deploy.plan')!;
    expect(await plan.lookup?.('never')).toEqual({ found: false });
    const result = await call(tools, 'deploy.plan', target, 'p1');
    expect(await plan.lookup?.('p1')).toEqual({ found: true, result });
    expect(await tools.get('deploy.build')!.lookup?.('p1')).toMatchObject({ found: 'ambiguous' });
  });

  it('lookup answers the first effect done under a key', async () => {
    const tools = createDemoTools({ workspaceDir: workspace() });
    const first = await call(tools, 'deploy.plan', target, 'p1');
    await call(tools, 'deploy.plan', { ...target, version: '0.2.0' }, 'p1');
    expect(await tools.get('deploy.plan')!.lookup?.('p1')).toEqual({ found: true, result: first });
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
    const plan = await call(tools, 'deploy.plan', target, 'f0');
    const sources = {
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
    const written = await call(tools, 'deploy.write_files', { ...target, plan, sources }, 'f1');
    expect(await call(tools, 'deploy.run_tests', { ...target, files: written }, 'f2')).toMatchObject({
      ok: false,
      tests: 2,
      passed: 1,
      failed: 1,
    });
    await expect(call(tools, 'deploy.build', { ...target, tests: null }, 'f3')).rejects.toMatchObject({
      kind: 'rejected',
    });
    // The refused build was called and did nothing: a call line, no effect.
    expect(Object.values(effectsPerStep(join(dirs[0]!, 'deploy-effects.jsonl')))).toEqual([1, 1, 1, 0]);
  });

  it('refuses steps out of order and invalid params', async () => {
    const tools = createDemoTools({ workspaceDir: workspace() });
    await expect(call(tools, 'deploy.write_files', { ...target, plan: null }, 'x')).rejects.toThrow(
      /run deploy.plan first/,
    );
    await expect(call(tools, 'deploy.deploy', { ...target, build: null }, 'y')).rejects.toThrow(
      /run deploy.plan first/,
    );
    const plan = tools.get('deploy.plan')!.params;
    expect(plan.safeParse({ ...target, service: '../etc' }).success).toBe(false);
    expect(plan.safeParse({ ...target, environment: 'moon' }).success).toBe(false);
    const write = tools.get('deploy.write_files')!.params;
    expect(write.safeParse({ ...target, plan: null, sources: { '../x.mjs': '' } }).success).toBe(false);
  });
});
