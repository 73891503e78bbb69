/**
 * A child process for the kill test: runs (or resumes) a deploy_pipeline turn on a SQLite file and prints
 * its output as JSON. `KILL_AT` = `commit:N` dies by SIGKILL right after the N-th commitTurn, `tool:NAME`
 * dies inside that tool call after its side effect.
 * argv: dbFile ledger tenant user sessionId mode(turn|resume)
 */
import { appendFileSync } from 'node:fs';
import { createBuiltinAgents } from '../../src/agents/index.js';
import { createRulesModel } from '../../src/models/rules/index.js';
import { createModelRegistry } from '../../src/models/types.js';
import { createToolRegistry, type Tool } from '../../src/runtime/tool.js';
import { resumeRun, runTurn } from '../../src/runtime/turn.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { StateStore } from '../../src/store/types.js';
import { ledgerTools } from './ledger-tools.js';

const [file, ledger, tenant, user, sessionId, mode] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string,
];
const killAt = process.env.KILL_AT ?? '';
const die = () => process.kill(process.pid, 'SIGKILL');

const inner = await openSqliteStore(file);
let commits = 0;
const store: StateStore = new Proxy(inner, {
  get(target, prop, receiver) {
    if (prop === 'commitTurn') {
      return async (...args: Parameters<StateStore['commitTurn']>) => {
        const result = await target.commitTurn(...args);
        commits++;
        if (killAt === `commit:${commits}`) die();
        return result;
      };
    }
    const value = Reflect.get(target, prop, receiver);
    return typeof value === 'function' ? value.bind(target) : value;
  },
});
const base = ledgerTools(ledger);
const tools = createToolRegistry(
  base.names().map((name): Tool => {
    const tool = base.get(name)!;
    return {
      ...tool,
      async execute(params, ctx) {
        const result = await tool.execute(params, ctx);
        if (killAt === `tool:${name}`) {
          appendFileSync(`${ledger}.killed`, 'x');
          die();
        }
        return result;
      },
    };
  }),
);
const options = {
  store,
  scope: { tenant_id: tenant, user_id: user },
  sessionId,
  agents: createBuiltinAgents(),
  models: createModelRegistry([createRulesModel()]),
  tools,
  lease: { ttlMs: 1_000, waitMs: 5_000 },
};
// The killed process's lease lives until its TTL runs out: the resumer waits for it.
const out =
  mode === 'turn'
    ? await runTurn({ ...options, input: 'deploy web 2.0.1 to production' })
    : await resumeRun(options);
process.stdout.write(JSON.stringify(out));
await inner.close();
