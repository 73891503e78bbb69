/**
 * The crash child of the tool-loop agent: starts or continues the session's durable run of the loop, as
 * its own OS process, against the harness's scripted model and demo airline.
 *   node --import tsx src/harness/crash/tool-loop/child.ts --store URL --session ID --workspace DIR
 *        --tenant T --user U --lease-owner O --framework plain --model URL --airline URL
 * (AGENTSTATE_CRASH_AT=<point> to SIGKILL itself there). Events go to stdout as JSON lines (points.ts);
 * exit 0 when done, 3 on a lease conflict, 1 on any other error.
 */
import { parseArgs } from 'node:util';
import { isAgentStateError } from '../../../core/errors.js';
import { openStore } from '../../../store/open.js';
import { watchStore } from '../kill-store.js';
import { CrashPoints, emit } from '../points.js';
import { FRAMEWORKS, type Framework, loadLoop, loopOutput, runLoop } from './agent.js';

const { values } = parseArgs({
  options: {
    store: { type: 'string' },
    session: { type: 'string' },
    workspace: { type: 'string' },
    tenant: { type: 'string', default: 'crash-harness' },
    user: { type: 'string', default: 'crash-user' },
    'lease-owner': { type: 'string', default: 'crash-harness' },
    framework: { type: 'string', default: 'plain' },
    model: { type: 'string' },
    airline: { type: 'string' },
  },
});

const { store: url, session, workspace, model, airline, framework } = values;
if (
  url === undefined ||
  session === undefined ||
  workspace === undefined ||
  model === undefined ||
  airline === undefined ||
  !(FRAMEWORKS as readonly string[]).includes(framework)
) {
  console.error(
    `usage: child --store URL --session ID --workspace DIR --model URL --airline URL [--framework ${FRAMEWORKS.join('|')}]`,
  );
  process.exit(2);
}

let store: Awaited<ReturnType<typeof openStore>>;
try {
  store = await openStore(url);
} catch (error) {
  const message = error instanceof Error ? error.message : String(error);
  emit({ event: 'error', message });
  console.error(message);
  process.exit(1);
}

const loop = await loadLoop(framework as Framework);
const points = CrashPoints.fromEnv();
const scope = { tenant_id: values.tenant, user_id: values.user };
// A resumed run reports its time to resume at its first new write, or when it returns with none left.
let resumeStarted: number | null = null;
let reported = false;
const report = (replayed: boolean) => {
  if (resumeStarted === null || reported) return;
  reported = true;
  emit({ event: 'resumed', ms: performance.now() - resumeStarted, replayed });
};
const watched = watchStore(store, points, () => report(true));
let code = 0;
try {
  if ((await store.getSession(scope, session)) === null) {
    await store.createSession(scope, { id: session, agent: null });
  } else {
    resumeStarted = performance.now();
  }
  const result = await runLoop({
    store: watched.store,
    scope,
    sessionId: session,
    leaseOwner: values['lease-owner'],
    loop,
    env: { airlineUrl: airline, modelUrl: model, workspaceDir: workspace, hooks: points.toolHooks() },
  });
  report(false);
  if (result.status !== 'done') throw new Error(`the run ended ${JSON.stringify(result)}`);
  const { output, keys } = await loopOutput(store, scope, result);
  emit({ event: 'done', output, keys });
} catch (error) {
  const message = error instanceof Error ? error.message : String(error);
  if (isAgentStateError(error, 'conflict')) {
    emit({ event: 'conflict', message });
    code = 3;
  } else {
    emit({ event: 'error', message });
    console.error(error);
    code = 1;
  }
} finally {
  await store.close();
}
process.exit(code);
