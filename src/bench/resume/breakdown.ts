/**
 * What the crash harness's "time to resume" is made of (issue 32): the deploy pipeline (the crash
 * harness's agent, with the demo tools) is cut at every commit of its run, before or after the write, and
 * resumed from a store opened afresh (as a new process opens it); the time from calling `resumeRun` to its
 * first new write is split into the kernel's own part (the lease, reading the run, replaying the journal)
 * and the tools' (their `lookup`, their own work, the retry policy's wait before a call is tried again).
 *
 *   node --import tsx src/bench/resume/breakdown.ts [STORE_URL ...]   (default: a SQLite file in a temp dir)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createBuiltinAgents } from '../../agents/index.js';
import { newId } from '../../core/ids.js';
import type { JsonValue } from '../../core/json.js';
import { createDemoTools } from '../../demo/tools.js';
import { createRulesModel } from '../../models/rules/index.js';
import { createModelRegistry } from '../../models/types.js';
import { createToolRegistry, type Tool, type ToolRegistry } from '../../runtime/tool.js';
import { resumeRun, runTurn } from '../../runtime/turn.js';
import { openStore } from '../../store/open.js';
import type { StateStore } from '../../store/types.js';

const WRITES = new Set([
  'commitTurn',
  'putCheckpoint',
  'beginAction',
  'completeAction',
  'updateTask',
  'createTask',
  'appendMessages',
]);

/** One resume, in ms from calling resumeRun. */
export interface ResumeTimes {
  readonly cut: string;
  /** To the first new write (or to the end, when there is none). */
  readonly total: number;
  /** Of which: taking the session lease. */
  readonly lease: number;
  /** Reading the session's head and the run's checkpoint. */
  readonly read: number;
  /** Tool lookups before the first write. */
  readonly lookup: number;
  /** Tools' own work before the first write. */
  readonly tool: number;
  /** The retry policy's wait between a lookup that found nothing and the call made again. */
  readonly retryWait: number;
  /** The kernel's own part: total less lookups, tools' work and the retry wait. */
  readonly kernel: number;
}

class Crash extends Error {}

interface Clock {
  start: number;
  firstWrite: number | null;
  spans: { kind: 'lease' | 'read' | 'lookup' | 'tool'; from: number; to: number }[];
}

function timedStore(inner: StateStore, clock: Clock, crashAt: number | null, after: boolean): StateStore {
  let commits = 0;
  return new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      const method = (value as (...args: unknown[]) => Promise<unknown>).bind(target);
      return async (...args: unknown[]) => {
        const name = String(prop);
        if (WRITES.has(name)) {
          if (clock.firstWrite === null) clock.firstWrite = performance.now();
          commits++;
          if (commits === crashAt && !after) throw new Crash(`cut before write ${commits}`);
          const result = await method(...args);
          if (commits === crashAt) throw new Crash(`cut after write ${commits}`);
          return result;
        }
        const from = performance.now();
        const result = await method(...args);
        const kind = name === 'acquireLease' ? 'lease' : 'read';
        if (clock.firstWrite === null) clock.spans.push({ kind, from, to: performance.now() });
        return result;
      };
    },
  });
}

function timedTools(inner: ToolRegistry, clock: Clock): ToolRegistry {
  const wrap = (tool: Tool): Tool => {
    const timed = async <T>(kind: 'lookup' | 'tool', work: () => Promise<T>): Promise<T> => {
      const from = performance.now();
      try {
        return await work();
      } finally {
        if (clock.firstWrite === null) clock.spans.push({ kind, from, to: performance.now() });
      }
    };
    const { lookup } = tool;
    return {
      ...tool,
      execute: (params: JsonValue, ctx) => timed('tool', () => tool.execute(params, ctx)),
      ...(lookup === undefined
        ? {}
        : { lookup: (key: string) => timed('lookup', () => lookup.call(tool, key)) }),
    };
  };
  return createToolRegistry(inner.names().map((name) => wrap(inner.get(name) as Tool)));
}

const sum = (clock: Clock, kind: Clock['spans'][number]['kind']) =>
  clock.spans.filter((s) => s.kind === kind).reduce((total, s) => total + (s.to - s.from), 0);

/** Cuts the pipeline at every write (before and after) and times each resume. */
export async function measureResumes(storeUrl: string, workDir: string): Promise<ResumeTimes[]> {
  const times: ResumeTimes[] = [];
  const base = {
    agents: createBuiltinAgents(),
    models: createModelRegistry([createRulesModel()]),
    agent: 'deploy_pipeline',
  };
  for (let at = 1; ; at++) {
    let reached = false;
    for (const after of [false, true]) {
      const scope = { tenant_id: 'resume-bench', user_id: `u_${newId('run').slice(4, 14)}` };
      const workspaceDir = join(workDir, `${at}-${after}`);
      const tools = createDemoTools({ workspaceDir });
      const first = await openStore(storeUrl);
      const session = await first.createSession(scope, { agent: 'deploy_pipeline' });
      const idle: Clock = { start: 0, firstWrite: null, spans: [] };
      const cut = timedStore(first, idle, at, after);
      const options = { ...base, scope, sessionId: session.id, tools };
      try {
        await runTurn({ ...options, store: cut, input: 'deploy web' });
        await first.close();
        continue; // the run has fewer writes: nothing was cut
      } catch (error) {
        if (!(error instanceof Crash)) throw error;
        reached = true;
      }
      await first.close();
      // As a new process: a store opened afresh.
      const store = await openStore(storeUrl);
      const clock: Clock = { start: performance.now(), firstWrite: null, spans: [] };
      const resumed = await resumeRun({
        ...options,
        store: timedStore(store, clock, null, false),
        tools: timedTools(tools, clock),
      });
      const end = clock.firstWrite ?? performance.now();
      await store.close();
      if (resumed === null) continue;
      const total = end - clock.start;
      const lookup = sum(clock, 'lookup');
      const tool = sum(clock, 'tool');
      const lastLookup = clock.spans.filter((s) => s.kind === 'lookup').at(-1);
      const nextTool = clock.spans.find(
        (s) => s.kind === 'tool' && lastLookup !== undefined && s.from >= lastLookup.to,
      );
      const retryWait =
        lastLookup !== undefined && nextTool !== undefined ? nextTool.from - lastLookup.to : 0;
      times.push({
        cut: `${after ? 'after' : 'before'} write ${at}`,
        total,
        lease: sum(clock, 'lease'),
        read: sum(clock, 'read'),
        lookup,
        tool,
        retryWait,
        kernel: total - lookup - tool - retryWait,
      });
    }
    if (!reached) return times;
  }
}

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

async function main(): Promise<void> {
  const workDir = mkdtempSync(join(tmpdir(), 'agentstate-resume-'));
  try {
    const urls = process.argv.slice(2);
    for (const url of urls.length > 0 ? urls : [`sqlite:${join(workDir, 'resume.db')}`]) {
      const times = await measureResumes(url, workDir);
      const row = (key: keyof Omit<ResumeTimes, 'cut'>) =>
        `${key}: p50 ${percentile(
          times.map((t) => t[key]),
          50,
        ).toFixed(1)} / max ${Math.max(...times.map((t) => t[key])).toFixed(1)} ms`;
      const shown = url.replace(/\/\/[^@/]*@/, '//');
      process.stdout.write(`${shown}: ${times.length} resumes\n`);
      const keys = ['total', 'kernel', 'lease', 'read', 'lookup', 'tool', 'retryWait'] as const;
      for (const key of keys) process.stdout.write(`  ${row(key)}\n`);
      // The first resume measured (its store opened afresh; the code already ran the cut run).
      const cold = times[0];
      if (cold !== undefined) {
        process.stdout.write(
          `  first resume (${cold.cut}): ${keys.map((k) => `${k} ${cold[k].toFixed(1)}`).join(', ')} ms\n`,
        );
      }
    }
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
