/**
 * CPU per checkpoint put, of LangGraph's savers, AgentStateSaver and the native `putCheckpoint`, side by
 * side: process CPU time (user + system) and wall time over many puts of the bench's payload, then CPU per
 * latest get over as many gets, each system `--repeat` times interleaved, medians shown. On a shared machine CPU time is steadier than ops/s, and it
 * is what a profile splits (run it under `node --cpu-prof` with `--systems` naming one system).
 *
 *   node --import tsx src/bench/langgraph/put-cpu.ts [--systems a,b] [--runs 25] [--repeat 3]
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runStates } from '../checkpoint/payload.js';
import type { SystemContext, SystemSpec } from '../checkpoint/system.js';
import { selectSystems } from '../checkpoint/systems/index.js';
import { saverMemory, saverSqlite } from './systems.js';

const STEPS = 40;
const DEFAULT_SYSTEMS =
  'langgraph-memory,agentstate-saver-memory,agentstate-memory,langgraph-sqlite,agentstate-saver-sqlite,agentstate-sqlite';

interface Sample {
  readonly cpuUs: number;
  readonly wallUs: number;
  /** CPU per latest get, after the puts (a check that reads did not pay for faster puts). */
  readonly getCpuUs: number;
}

function specOf(name: string): SystemSpec {
  if (name === saverMemory.name) return saverMemory;
  if (name === saverSqlite.name) return saverSqlite;
  const [spec] = selectSystems(name);
  if (spec === undefined) throw new Error(`unknown system ${name}`);
  return spec;
}

async function measure(spec: SystemSpec, dir: string, runs: number): Promise<Sample> {
  const context: SystemContext = {
    dir: mkdtempSync(join(dir, `${spec.name}-`)),
    synchronous: 'NORMAL',
    postgresUrl: process.env.AGENTSTATE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    redisUrl: process.env.AGENTSTATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
    tag: randomBytes(6).toString('hex'),
  };
  const states = runStates(STEPS);
  const system = await spec.open(context);
  try {
    // Two warm-up runs, not counted.
    for (let step = 0; step < STEPS; step++) {
      for (const run of [runs, runs + 1])
        await system.put(run, step, states[step] as (typeof states)[number]);
    }
    const cpu = process.cpuUsage();
    const wall = performance.now();
    for (let run = 0; run < runs; run++) {
      for (let step = 0; step < STEPS; step++)
        await system.put(run, step, states[step] as (typeof states)[0]);
    }
    const used = process.cpuUsage(cpu);
    const wallUs = performance.now() - wall;
    const gets = runs * STEPS;
    const getCpu = process.cpuUsage();
    for (let i = 0; i < gets; i++) await system.latest(i % runs);
    const getUsed = process.cpuUsage(getCpu);
    return {
      cpuUs: (used.user + used.system) / gets,
      wallUs: (wallUs * 1000) / gets,
      getCpuUs: (getUsed.user + getUsed.system) / gets,
    };
  } finally {
    await system.close();
  }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
};

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      systems: { type: 'string', default: DEFAULT_SYSTEMS },
      runs: { type: 'string', default: '25' },
      repeat: { type: 'string', default: '3' },
    },
  });
  const specs = values.systems.split(',').map((name) => specOf(name.trim()));
  const runs = Number(values.runs);
  const repeat = Number(values.repeat);
  const dir = mkdtempSync(join(tmpdir(), 'agentstate-put-cpu-'));
  const samples = specs.map((): Sample[] => []);
  try {
    for (let r = 0; r < repeat; r++) {
      for (const [i, spec] of specs.entries()) samples[i]?.push(await measure(spec, dir, runs));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(
    `${runs} runs x ${STEPS} puts per system, ${repeat} times interleaved, medians\n\n| system | CPU us per put | wall us per put | CPU us per latest get |\n| --- | ---: | ---: | ---: |\n`,
  );
  for (const [i, spec] of specs.entries()) {
    const list = samples[i] ?? [];
    const cpu = median(list.map((s) => s.cpuUs));
    const wall = median(list.map((s) => s.wallUs));
    const get = median(list.map((s) => s.getCpuUs));
    process.stdout.write(`| ${spec.name} | ${cpu.toFixed(0)} | ${wall.toFixed(0)} | ${get.toFixed(0)} |\n`);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
