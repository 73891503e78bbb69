/**
 * A child process that crashes a deploy_pipeline run for real: it runs a turn on the SQLite file the test
 * server also uses and dies by SIGKILL inside `deploy.run_tests`, after its side effect and ledger line,
 * before the runtime records the result. The run is left with a PENDING action and its checkpoints.
 * argv: dbFile workspaceDir tenant user sessionId input
 */
import { BUILTIN_AGENTS } from '../../src/agents/index.js';
import { createDemoTools } from '../../src/demo/index.js';
import { createRulesModel } from '../../src/models/rules/index.js';
import { createModelRegistry } from '../../src/models/types.js';
import { createAgentRegistry } from '../../src/runtime/agent.js';
import { runTurn } from '../../src/runtime/turn.js';
import { openStore } from '../../src/store/open.js';

const [file, workspaceDir, tenant, user, sessionId, input] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string,
];
const store = await openStore(`sqlite:${file}`);
const tools = createDemoTools({
  workspaceDir,
  hooks: {
    at(point, tool) {
      if (point === 'effect_done' && tool === 'deploy.run_tests') process.kill(process.pid, 'SIGKILL');
    },
  },
});
await runTurn({
  agents: createAgentRegistry(BUILTIN_AGENTS),
  models: createModelRegistry([createRulesModel()]),
  tools,
  store,
  scope: { tenant_id: tenant, user_id: user },
  sessionId,
  input,
  // A short lease, so that the test's resume need not wait the default 10 s for the dead run's lease.
  lease: { ttlMs: 1500 },
});
process.stdout.write('the run finished: it was meant to be killed\n');
process.exit(3);
