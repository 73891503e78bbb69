/**
 * The chat on a store directly (`--store URL`): the runtime runs in this process. A turn's events are read
 * from the store as the run writes them (woken by the run's own news, run-notify.ts), as a server's
 * stream reads them.
 */
import { isFinalRunEvent, OPEN_TASK_STATES, type Session, type Task } from '../../core/model.js';
import { runEventsOrTimeout } from '../../runtime/run-notify.js';
import { buildModelRegistry, type ModelsSpec, modelForSession, RULES_ONLY } from '../../server/models.js';
import { createRuntimeTurnRunner } from '../../server/runtime-runner.js';
import { openStore } from '../../store/open.js';
import type { Scope, StateStore } from '../../store/types.js';
import { linkRuntime } from '../commands/runtime-link.js';
import { CliError } from '../context.js';
import { assertOpen, type ChatBackend, type TurnView } from './backend.js';
import type { LiveEvent } from './live.js';

const PAGE = 500;
const POLL_MS = 250;

/**
 * Tells `onEvent` of the run's events (all but the final one) as they are stored, from when the run starts
 * (`runId`) until its final event or, once `settled`, the events stored by then.
 */
async function followRun(
  store: StateStore,
  scope: Scope,
  sessionId: string,
  runId: Promise<string>,
  settled: Promise<unknown>,
  onEvent: (event: LiveEvent) => void,
): Promise<void> {
  let over = false;
  const done = settled.then(
    () => {
      over = true;
    },
    () => {
      over = true;
    },
  );
  // A turn refused before its run started has no events.
  const id = await Promise.race([runId, done.then(() => null)]);
  if (id === null) return;
  let after: string | null = null;
  for (;;) {
    const lastRound = over;
    const news = runEventsOrTimeout(sessionId, id, POLL_MS);
    const events = await store.listRunEvents(scope, sessionId, id, { after, limit: PAGE });
    for (const event of events) {
      after = event.id;
      if (isFinalRunEvent(event.type)) return;
      onEvent(event);
    }
    if (events.length === PAGE) continue;
    if (lastRound) return;
    await Promise.race([news, done]);
  }
}

export async function createStoreBackend(
  url: string,
  scope: Scope,
  dataDir: string,
  agentsModule?: string,
  /** The models a session may run with (default: `rules` only). */
  models: ModelsSpec = RULES_ONLY,
): Promise<ChatBackend> {
  const store = await openStore(url);
  let runtime: Awaited<ReturnType<typeof linkRuntime>>;
  try {
    runtime = await linkRuntime(dataDir, agentsModule, buildModelRegistry(models));
  } catch (error) {
    await store.close();
    throw error;
  }
  const runner = createRuntimeTurnRunner(store, runtime.setup, models);
  const modelOf = (session: Session) => ({ model: modelForSession(models, session) });
  // The session's open tasks and those it carries over from the user's ended sessions, as the server shows them.
  const tasksOf = async (session: Session): Promise<Task[]> =>
    runner.openTasks
      ? runner.openTasks(session)
      : (await store.listTasks(scope, { session_id: session.id, state: OPEN_TASK_STATES, limit: 50 })).items;
  const sessionOf = async (id: string) => {
    const session = await store.getSession(scope, id);
    if (session === null)
      throw new CliError(
        `session ${id} not found in tenant ${scope.tenant_id} for user ${scope.user_id} (or it has expired)`,
      );
    return session;
  };
  return {
    where: `store ${url}`,
    async open(sessionId, agent, model) {
      if (!runtime.agentNames.includes(agent)) {
        throw new CliError(`no agent named ${agent}; choose one of ${runtime.agentNames.join(', ')}`);
      }
      if (sessionId === undefined) {
        if (model !== undefined && models.available[model] === undefined) {
          throw new CliError(
            `--model: no model named ${model}; choose one of ${Object.keys(models.available).join(', ')}`,
          );
        }
        // The session keeps its model where the server keeps it: in its context.
        const created = await store.createSession(scope, {
          agent,
          ...(model === undefined ? {} : { context: { model } }),
        });
        return { session: created, tasks: await tasksOf(created), recent: [], ...modelOf(created) };
      }
      const session = await sessionOf(sessionId);
      assertOpen(session);
      return {
        session,
        tasks: await tasksOf(session),
        recent: await store.lastMessages(scope, sessionId, 6),
        ...modelOf(session),
      };
    },
    async turn(sessionId, input, onEvent): Promise<TurnView> {
      const session = await sessionOf(sessionId);
      if (onEvent === undefined) return runner.runTurn(scope, session, input);
      let started: (runId: string) => void = () => undefined;
      const runId = new Promise<string>((resolve) => {
        started = resolve;
      });
      const turn = runner.runTurn(scope, session, input, { onRun: (id) => started(id) });
      const following = followRun(store, scope, sessionId, runId, turn, onEvent);
      try {
        return await turn;
      } finally {
        await following.catch(() => undefined);
      }
    },
    async openTasks(sessionId) {
      return tasksOf(await sessionOf(sessionId));
    },
    async close() {
      await runtime.close();
      await store.close();
    },
  };
}
