/**
 * `npm run bench:turn`: a flight booking's turns through the runtime, no HTTP (bench.ts), on each store;
 * with `--before DIR`, that checkout's build beside this one, round by round in one process.
 *
 *   node dist/src/bench/turn/main.js [--stores sqlite,postgres,memory] [--users 40] [--warm 10]
 *                                    [--rounds 3] [--before DIR] [--report FILE]
 *                                    [--checkpoint-defer-ms MS] [--cancel-check-ms MS]
 *
 * The demo airline runs in a child process (as in the load harness); postgres and redis use
 * AGENTSTATE_BENCH_POSTGRES_URL / AGENTSTATE_BENCH_REDIS_URL (src/bench/stores.ts).
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { startAirlineChild } from '../../harness/load/airline-child.js';
import { makeFolder } from '../../process/folders.js';
import { BENCH_STORE_NAMES } from '../stores.js';
import { runTurnBench, type TurnBuild, turnBenchMarkdown } from './bench.js';

const USAGE = `usage: bench:turn [--stores sqlite,postgres,memory] [--users N] [--warm N] [--rounds N] [--before DIR] [--report FILE]
                  [--checkpoint-defer-ms MS] [--cancel-check-ms MS]
  --before                a checkout built with npm run build: its runtime and stores beside this build's
  --checkpoint-defer-ms   the runs' checkpointDeferMs (default: the runtime's, 50)
  --cancel-check-ms       the runs' cancelCheckMs (default: the runtime's, 250); long ones keep a loaded
                          machine's timers from adding statements to the counts`;

function fail(message: string): never {
  process.stderr.write(`${message}\n${USAGE}\n`);
  process.exit(2);
}

function count(text: string, option: string, min: number): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > 10_000)
    fail(`${option}: a whole number from ${min} to 10000, got ${JSON.stringify(text)}`);
  return value;
}

/** A time in ms given as `option` (the runtime's default when not given). */
function ms(text: string | undefined, option: string): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!/^\d+$/.test(text) || value > 3_600_000)
    fail(`${option}: a whole number of ms from 0 to 3600000, got ${JSON.stringify(text)}`);
  return value;
}

/** The runtime and stores of the checkout built in `dir`. */
async function loadBuild(
  dir: string,
  label: string,
  airlineUrl: string,
  workspace: string,
): Promise<TurnBuild> {
  const load = async <T>(path: string): Promise<T> => {
    const file = join(dir, 'dist/src', path);
    if (!existsSync(file)) fail(`${dir}: no dist/src/${path} (run npm run build there)`);
    return (await import(pathToFileURL(file).href)) as T;
  };
  const turn = await load<typeof import('../../runtime/turn.js')>('runtime/turn.js');
  const agents = await load<typeof import('../../agents/index.js')>('agents/index.js');
  const rules = await load<typeof import('../../models/rules/index.js')>('models/rules/index.js');
  const models = await load<typeof import('../../models/types.js')>('models/types.js');
  const demo = await load<typeof import('../../demo/tools.js')>('demo/tools.js');
  const open = await load<typeof import('../../store/open.js')>('store/open.js');
  const executor = await load<typeof import('../../store/sql/executor.js')>('store/sql/executor.js');
  return {
    label,
    runTurn: turn.runTurn,
    agents: agents.createBuiltinAgents(),
    models: models.createModelRegistry([rules.createRulesModel()]),
    tools: demo.createDemoTools({ workspaceDir: join(workspace, label), airlineUrl }),
    openStore: (url) => open.openStore(url),
    statements: () => executor.statementsSent.sqlite + executor.statementsSent.postgres,
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      stores: { type: 'string', default: 'sqlite,postgres,memory' },
      users: { type: 'string', default: '40' },
      warm: { type: 'string', default: '10' },
      rounds: { type: 'string', default: '3' },
      before: { type: 'string' },
      report: { type: 'string' },
      'checkpoint-defer-ms': { type: 'string' },
      'cancel-check-ms': { type: 'string' },
    },
  });
  const stores = values.stores.split(',').map((name) => name.trim());
  for (const name of stores)
    if (!(BENCH_STORE_NAMES as readonly string[]).includes(name)) fail(`unknown store ${name}`);
  const users = count(values.users, '--users', 1);
  const warmUsers = count(values.warm, '--warm', 0);
  const rounds = count(values.rounds, '--rounds', 1);
  const checkpointDeferMs = ms(values['checkpoint-defer-ms'], '--checkpoint-defer-ms');
  const cancelCheckMs = ms(values['cancel-check-ms'], '--cancel-check-ms');
  // This file is dist/src/bench/turn/main.js of the checkout it belongs to.
  const here = resolve(fileURLToPath(import.meta.url), '../../../../..');
  const before = values.before === undefined ? null : resolve(values.before);
  // Checked before the airline starts: a refusal leaves no child behind.
  if (before !== null && !existsSync(join(before, 'dist/src/runtime/turn.js')))
    fail(`${before}: no dist/src/runtime/turn.js (run npm run build there)`);
  const dir = mkdtempSync(join(tmpdir(), 'agentstate-bench-turn-'));
  const airline = await startAirlineChild(join(dir, 'airline'));
  try {
    const builds: TurnBuild[] = [];
    if (before !== null) builds.push(await loadBuild(before, 'before', airline.url, dir));
    builds.push(await loadBuild(here, before === null ? 'this' : 'after', airline.url, dir));
    const load = loadavg()[0] ?? 0;
    const result = await runTurnBench({
      builds,
      stores,
      users,
      warmUsers,
      rounds,
      timers: {
        ...(checkpointDeferMs === undefined ? {} : { checkpointDeferMs }),
        ...(cancelCheckMs === undefined ? {} : { cancelCheckMs }),
      },
      onProgress: (text) => process.stderr.write(`${text}\n`),
    });
    const labels = builds.map((build) => build.label);
    const text = [
      `${users} bookings (4 slot-filling turns and 1 confirming turn each) per build, store and round, after ` +
        `${warmUsers} not measured; ${rounds} rounds; medians over rounds. CPU: this process's (user and ` +
        "system, all threads), per turn; a database server's own is not in it. Statements: SQL statements " +
        'sent per turn (SQLite and PostgreSQL).',
      '',
      turnBenchMarkdown(result, builds.length === 2 ? [labels[1] ?? '', labels[0] ?? ''] : []),
      '',
      `load average ${load.toFixed(2)} at the start, ${(loadavg()[0] ?? 0).toFixed(2)} at the end`,
    ].join('\n');
    process.stdout.write(`${text}\n`);
    if (values.report !== undefined) {
      makeFolder(dirname(values.report), 'report folder');
      writeFileSync(
        values.report,
        `${JSON.stringify({ builds: labels, users, warmUsers, ...result }, null, 2)}\n`,
      );
    }
  } finally {
    await airline.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
