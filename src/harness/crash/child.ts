/**
 * The crash child: runs the `deploy_pipeline` agent on one session of a store, as its own OS process.
 *   node --import tsx src/harness/crash/child.ts --store URL --session ID --workspace DIR
 *        --tenant T --user U --lease-owner O [--lease-ttl-ms N]         (AGENTSTATE_CRASH_AT=<point> to SIGKILL itself there)
 * A new session runs the turn; an existing one is resumed (resumeRun), and the turn runs only if no run of
 * it was ever checkpointed. Events go to stdout as JSON lines (see points.ts); exit 0 when done, 3 on a
 * lease conflict (another process runs the session), 1 on any other error.
 */
import { parseArgs } from 'node:util';
import { isAgentStateError } from '../../core/errors.js';
import { openStore } from '../../store/open.js';
import { runPipeline } from './pipeline.js';
import { CrashPoints, emit } from './points.js';

const { values } = parseArgs({
  options: {
    store: { type: 'string' },
    session: { type: 'string' },
    workspace: { type: 'string' },
    tenant: { type: 'string', default: 'crash-harness' },
    user: { type: 'string', default: 'crash-user' },
    'lease-owner': { type: 'string' },
    'lease-ttl-ms': { type: 'string' },
  },
});

if (values.store === undefined || values.session === undefined || values.workspace === undefined) {
  console.error(
    'usage: child --store URL --session ID --workspace DIR [--tenant T --user U --lease-owner O]',
  );
  process.exit(2);
}

let store: Awaited<ReturnType<typeof openStore>>;
try {
  store = await openStore(values.store);
} catch (error) {
  // One line, as the harness reports it: the store URL is wrong or the store does not answer.
  const message = error instanceof Error ? error.message : String(error);
  emit({ event: 'error', message });
  console.error(message);
  process.exit(1);
}
let code = 0;
try {
  const { output, keys } = await runPipeline({
    store,
    scope: { tenant_id: values.tenant, user_id: values.user },
    sessionId: values.session,
    workspaceDir: values.workspace,
    leaseOwner: values['lease-owner'],
    leaseTtlMs: values['lease-ttl-ms'] === undefined ? undefined : Number(values['lease-ttl-ms']),
    points: CrashPoints.fromEnv(),
  });
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
