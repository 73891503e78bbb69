/** The benchmark's arithmetic: percentiles, medians over repeats, ratios, system selection. */
import { describe, expect, it } from 'vitest';
import { type OpStats, percentile, summarize } from '../../src/bench/checkpoint/measure.js';
import { mergeRepeats } from '../../src/bench/checkpoint/repeat.js';
import { ratios } from '../../src/bench/checkpoint/report.js';
import type { SystemResult } from '../../src/bench/checkpoint/run.js';
import { selectSystems } from '../../src/bench/checkpoint/systems/index.js';

function stats(ops_per_s: number, p99_ms = 1): OpStats {
  return {
    count: 10,
    ops_per_s,
    p50_ms: p99_ms / 2,
    p99_ms,
    mean_ms: p99_ms / 2,
    max_ms: p99_ms,
    cpu_us_per_op: 50,
  };
}

function result(name: string, family: string, backend: string, ops: number, bytes: number): SystemResult {
  return {
    name,
    family,
    backend,
    concurrency: 1,
    repeats: 1,
    ops: { put: stats(ops), latest: stats(ops * 2), history: stats(ops / 2) },
    stored: {
      method: 'm',
      bytes: bytes * 10,
      checkpoints: 10,
      bytes_per_checkpoint: bytes,
      file_bytes_per_checkpoint: null,
    },
    error: null,
  };
}

describe('bench arithmetic', () => {
  it('takes nearest-rank percentiles and throughput over wall time', () => {
    const samples = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(samples, 50)).toBe(50);
    expect(percentile(samples, 99)).toBe(99);
    expect(percentile([7], 99)).toBe(7);
    expect(summarize([3, 1, 2], 1500)).toMatchObject({
      count: 3,
      ops_per_s: 2,
      p50_ms: 2,
      p99_ms: 3,
      max_ms: 3,
    });
  });

  it('reports the median of each figure over repeats, and the first error of any repeat', () => {
    const runs = [100, 300, 200].map((ops) => result('agentstate-sqlite', 'agentstate', 'sqlite', ops, ops));
    const merged = mergeRepeats(runs);
    expect(merged.repeats).toBe(3);
    expect(merged.ops?.put.ops_per_s).toBe(200);
    expect(merged.ops?.latest.ops_per_s).toBe(400);
    const failed = mergeRepeats([
      runs[0] as SystemResult,
      { ...(runs[1] as SystemResult), ops: null, error: 'boom' },
    ]);
    expect(failed).toMatchObject({ error: 'boom', ops: null, repeats: 2 });
  });

  it('compares each agentstate system with the LangGraph and raw systems of the same backend only', () => {
    const systems = [
      result('agentstate-sqlite', 'agentstate', 'sqlite', 100, 2000),
      result('langgraph-sqlite', 'langgraph', 'sqlite', 400, 16000),
      result('raw-sqlite', 'raw', 'sqlite', 50, 8000),
      result('langgraph-memory', 'langgraph', 'memory', 1, 1),
      { ...result('raw-redis', 'raw', 'redis', 1, 1) },
    ];
    const out = ratios(systems);
    expect(out.map((r) => `${r.versus}/${r.operation}`)).toEqual([
      'langgraph-sqlite/put',
      'langgraph-sqlite/latest',
      'langgraph-sqlite/history',
      'raw-sqlite/put',
      'raw-sqlite/latest',
      'raw-sqlite/history',
    ]);
    expect(out[0]).toMatchObject({ ops_per_s: 0.25, p99: 1, bytes_per_checkpoint: 0.125 });
    expect(out[3]).toMatchObject({ ops_per_s: 2, bytes_per_checkpoint: 0.25 });
  });

  it('pairs systems at the same concurrency: one connection with one, a pool of 8 with 8', () => {
    const at = (r: SystemResult, concurrency: number): SystemResult => ({ ...r, concurrency });
    const out = ratios([
      result('agentstate-postgres', 'agentstate', 'postgres', 10, 1),
      at(result('agentstate-postgres-8', 'agentstate', 'postgres', 40, 1), 8),
      result('raw-pg-1', 'raw', 'postgres', 20, 1),
      at(result('raw-pg-8', 'raw', 'postgres', 80, 1), 8),
    ]);
    expect(
      out.filter((r) => r.operation === 'put').map((r) => `${r.agentstate}/${r.versus}=${r.ops_per_s}`),
    ).toEqual(['agentstate-postgres/raw-pg-1=0.5', 'agentstate-postgres-8/raw-pg-8=0.5']);
  });

  it('selects systems by name or group, server systems only when asked', () => {
    const names = (list: string) => selectSystems(list).map((s) => s.name);
    expect(names('default')).toEqual([
      'agentstate-memory',
      'langgraph-memory',
      'agentstate-sqlite',
      'langgraph-sqlite',
      'raw-sqlite',
    ]);
    expect(names('postgres')).toEqual([
      'agentstate-postgres',
      'langgraph-postgres',
      'raw-pg-1',
      'agentstate-postgres-8',
      'langgraph-postgres-8',
      'raw-pg-8',
    ]);
    expect(names('raw-pg-8,sqlite')).toEqual([
      'agentstate-sqlite',
      'langgraph-sqlite',
      'raw-sqlite',
      'raw-pg-8',
    ]);
    expect(selectSystems('raw-pg-8')[0]?.concurrency).toBe(8);
    expect(() => selectSystems('mongo')).toThrow(/unknown system "mongo"/);
  });
});
