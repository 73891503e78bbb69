/**
 * `npm run bench:builds -- --before DIR`: agentstate's own stores of two builds side by side, on the
 * checkpoint benchmark's workload (puts, latest gets, history lists, the same payload), each build through
 * its own `openStore`, the two interleaved run by run so that a change of the machine's load hits both
 * alike. It answers "is this build slower than that one": two runs of `npm run bench` against LangGraph's
 * savers cannot tell a 10% change from this machine's noise. DIR is a checkout built with `npm run build`.
 *
 *   node dist/src/bench/builds/main.js --before DIR [--after DIR] [--stores memory,sqlite,postgres,redis]
 *                                      [--size small] [--repeat 9]
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import pg from 'pg';
import type { StateStore } from '../../store/types.js';
import { runStates } from '../checkpoint/payload.js';
import { median } from '../checkpoint/repeat.js';
import { runSystem, SIZES, type SystemResult } from '../checkpoint/run.js';
import type { Backend, SystemContext, SystemSpec } from '../checkpoint/system.js';
import { agentstateDriver } from '../checkpoint/systems/agentstate.js';
import { dropSchema } from '../checkpoint/systems/postgres.js';

const USAGE = `usage: bench:builds --before DIR [--after DIR] [--stores memory,sqlite,postgres,redis] [--size small|full|tiny] [--repeat N]
  DIR        a checkout built with npm run build (default --after: this one)
  --stores   default memory,sqlite,postgres; postgres and redis use AGENTSTATE_BENCH_POSTGRES_URL /
             AGENTSTATE_BENCH_REDIS_URL (default the local servers), each build in a schema or prefix of its own`;

type OpenStore = (url: string, options?: { sqliteSynchronous?: 'NORMAL' }) => Promise<StateStore>;
const STORES: readonly Backend[] = ['memory', 'sqlite', 'postgres', 'redis'];
const OPS = ['put', 'latest', 'history'] as const;

function fail(message: string): never {
  process.stderr.write(`${message}\n${USAGE}\n`);
  process.exit(2);
}

/** The `openStore` of the checkout built in `dir`. */
async function openerOf(dir: string): Promise<OpenStore> {
  const file = join(dir, 'dist/src/store/open.js');
  if (!existsSync(file)) fail(`${dir}: no dist/src/store/open.js (run npm run build there)`);
  const module = (await import(pathToFileURL(file).href)) as { openStore?: OpenStore };
  if (typeof module.openStore !== 'function') fail(`${file}: no openStore export`);
  return module.openStore;
}

/** One build's store of one backend as a benchmark system; a server's schema or keys go at close. */
function buildSystem(build: string, openStore: OpenStore, backend: Backend, urls: Urls): SystemSpec {
  return {
    name: `${backend}@${build}`,
    family: 'agentstate',
    backend,
    async open(context: SystemContext) {
      const name = `bench_builds_${build}_${context.tag}`;
      const url =
        backend === 'memory'
          ? 'memory:'
          : backend === 'sqlite'
            ? `sqlite:${join(context.dir, 'agentstate.db')}`
            : backend === 'postgres'
              ? `${urls.postgres}${urls.postgres.includes('?') ? '&' : '?'}schema=${name}`
              : `${urls.redis}${urls.redis.includes('?') ? '&' : '?'}prefix=${name}`;
      const store = await openStore(url, backend === 'sqlite' ? { sqliteSynchronous: 'NORMAL' } : {});
      // Closing drops the run's whole schema or keys: no checkpoint is pruned one by one first.
      const system = agentstateDriver(store, context.tag, async () => null);
      return {
        ...system,
        async close() {
          await system.close();
          if (backend === 'postgres') {
            const pool = new pg.Pool({ connectionString: urls.postgres, max: 1 });
            await dropSchema(pool, name).finally(() => pool.end());
          } else if (backend === 'redis') {
            const redis = new Redis(urls.redis, { lazyConnect: true });
            await redis.connect();
            try {
              for await (const keys of redis.scanStream({ match: `${name}*`, count: 500 }) as AsyncIterable<
                string[]
              >) {
                if (keys.length > 0) await redis.unlink(...keys);
              }
            } finally {
              redis.disconnect();
            }
          }
        },
      };
    },
  };
}

interface Urls {
  readonly postgres: string;
  readonly redis: string;
}

type Ops = NonNullable<SystemResult['ops']>;

/** One figure of both builds: medians, and the median and range of the per-run ratios (run i with run i). */
function compare(runs: Record<'before' | 'after', SystemResult[]>, figure: (ops: Ops) => number) {
  const of = (result: SystemResult) => {
    if (result.ops === null) throw new Error(`${result.name}: ${result.error}`);
    return figure(result.ops);
  };
  const before = runs.before.map(of);
  const after = runs.after.map(of);
  const ratios = after.map((value, i) => value / (before[i] as number));
  const cell = (values: number[]) =>
    `${median(values).toFixed(2)} (${Math.min(...values).toFixed(2)} - ${Math.max(...values).toFixed(2)})`;
  return {
    before: median(before),
    after: median(after),
    ratio: cell(ratios),
    inverse: cell(ratios.map((ratio) => 1 / ratio)),
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      before: { type: 'string' },
      after: { type: 'string' },
      stores: { type: 'string', default: 'memory,sqlite,postgres' },
      size: { type: 'string', default: 'small' },
      repeat: { type: 'string', default: '9' },
    },
  });
  if (values.before === undefined) fail('--before is required');
  const size = SIZES[values.size as keyof typeof SIZES] ?? fail(`unknown --size ${values.size}`);
  const repeat = Number(values.repeat);
  if (!Number.isInteger(repeat) || repeat < 1 || repeat > 50)
    fail('--repeat must be a whole number, 1 to 50');
  const stores = values.stores.split(',').map((name) => name.trim()) as Backend[];
  for (const name of stores) if (!STORES.includes(name)) fail(`unknown store ${name}`);
  // This file is dist/src/bench/builds/main.js of the checkout it belongs to.
  const here = resolve(fileURLToPath(import.meta.url), '../../../../..');
  const builds = {
    before: await openerOf(resolve(values.before)),
    after: await openerOf(resolve(values.after ?? here)),
  };
  const urls: Urls = {
    postgres: process.env.AGENTSTATE_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    redis: process.env.AGENTSTATE_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379',
  };
  const states = runStates(size.steps);
  const dir = mkdtempSync(join(tmpdir(), 'agentstate-bench-builds-'));
  const load = loadavg()[0] ?? 0;
  const lines = [
    `${repeat} runs per build and store, interleaved (size ${values.size}); medians; after / before above 1 is faster`,
    "(CPU: of this process, per operation; a database server's own is not in it)",
    '',
    '| store | op | ops/s before | ops/s after | after / before (per run: min - max) | CPU µs before | CPU µs after | before / after (per run: min - max) |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  try {
    for (const backend of stores) {
      const runs: Record<'before' | 'after', SystemResult[]> = { before: [], after: [] };
      for (let r = 0; r < repeat; r++) {
        // The order alternates, so neither build always runs first.
        const order = r % 2 === 0 ? (['before', 'after'] as const) : (['after', 'before'] as const);
        for (const build of order) {
          const context: SystemContext = {
            dir: mkdtempSync(join(dir, `${backend}-${build}-`)),
            synchronous: 'NORMAL',
            postgresUrl: urls.postgres,
            redisUrl: urls.redis,
            tag: randomBytes(6).toString('hex'),
          };
          const spec = buildSystem(build, builds[build], backend, urls);
          runs[build].push(await runSystem(spec, context, size, states));
          process.stderr.write(`${backend} ${build} ${r + 1}/${repeat}\n`);
        }
      }
      for (const op of OPS) {
        const speed = compare(runs, (stats) => stats[op].ops_per_s);
        const cpu = compare(runs, (stats) => stats[op].cpu_us_per_op);
        lines.push(
          `| ${backend} | ${op} | ${speed.before.toFixed(0)} | ${speed.after.toFixed(0)} | ${speed.ratio} | ${cpu.before.toFixed(0)} | ${cpu.after.toFixed(0)} | ${cpu.inverse} |`,
        );
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  lines.push(
    '',
    `load average ${load.toFixed(2)} at the start, ${(loadavg()[0] ?? 0).toFixed(2)} at the end`,
  );
  process.stdout.write(`${lines.join('\n')}\n`);
}

await main();
