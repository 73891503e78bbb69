/**
 * The agent runtime behind the HTTP routes: `runTurn` for `POST .../turns`, `resumeRun` for
 * `POST .../resume`, and a session's checkpoints gathered from the runs its messages name.
 * A second turn of a session while one runs gets the runtime's lease `conflict` (HTTP 409). Turns of
 * different sessions in flight at once go on oldest first (turn-scheduler.ts).
 */
import { buildContext } from '../context/build.js';
import { taskTypesFrom } from '../context/describe.js';
import { AgentStateError } from '../core/errors.js';
import { type Checkpoint, OPEN_TASK_STATES, type Session } from '../core/model.js';
import {
  listSessionRuns,
  type RuntimeOptions,
  resumeRun,
  runTurn,
  type TurnOutput,
} from '../runtime/index.js';
import { loadSnapshot } from '../runtime/snapshot.js';
import { finalAnswer } from '../runtime/turn-answers.js';
import { TurnScheduler } from '../runtime/turn-scheduler.js';
import type { Page, Scope, StateStore } from '../store/types.js';
import { checkModelName, type ModelsSpec, modelForSession } from './models.js';
import {
  ENQUEUE_WAIT_MS,
  INTERRUPT_WAIT_MS,
  interruptRun,
  isBusy,
  SessionQueues,
  sessionOnBusy,
} from './on-busy.js';
import { answerQueued, drainQueue, type QueueTurns } from './queued-turns.js';
import { enqueueInput } from './turn-queue.js';
import type { SessionRef, TurnResponse, TurnRunner } from './turn-runner.js';

/** Everything of RuntimeOptions that does not change per request. */
export type RuntimeSetup = Omit<RuntimeOptions, 'store' | 'scope' | 'sessionId'>;

/** The most open tasks a session shows. */
const OPEN_TASKS_SHOWN = 100;

/** How many of a session's newest runs the checkpoint history covers. */
const RUNS_SCANNED = 50;

function response(output: TurnOutput, model: string): TurnResponse {
  return { ...output, model };
}

type SessionFields = Pick<Session, 'agent' | 'context'>;

function isWholeSession(session: SessionRef): session is SessionRef & SessionFields {
  return 'context' in session && 'agent' in session;
}

/**
 * The runtime's turns as the routes need them. `models`: the models configured (models.ts), whose
 * registry is `setup.models`; a session's turns run with the one it named (`context.model`), else its
 * agent's, else the default. Without it, every turn runs with `setup.model` (default `rules`).
 */
export function createRuntimeTurnRunner(
  store: StateStore,
  setup: RuntimeSetup,
  models?: ModelsSpec,
): TurnRunner {
  const scheduler = new TurnScheduler();
  const queues = new SessionQueues();
  const scheduled = <T>(run: (options: RuntimeOptions) => Promise<T>, scope: Scope, session: SessionRef) =>
    scheduler.run(store, (seen) => run({ ...setup, store: seen, scope, sessionId: session.id }));
  const fallback = setup.model ?? 'rules';
  const spec: ModelsSpec = models ?? {
    default: fallback,
    agents: {},
    available: { [fallback]: { kind: 'rules' } },
  };
  const modelFor = (session: SessionFields) => modelForSession(spec, session);
  /** The turns the session's queue runs (turn-queue.ts), with the session's model. */
  const queueTurns = (scope: Scope, session: SessionRef, model: string): QueueTurns => ({
    run: async (input, { requestKey, waitMs, onRun }) => ({
      ...(await scheduled(
        (options) =>
          runTurn({
            ...options,
            input,
            model,
            requestKey,
            ...(onRun === undefined ? {} : { onRun }),
            lease: { ...setup.lease, waitMs },
          }),
        scope,
        session,
      )),
      model,
    }),
    answerOf: async (runId) => {
      const output = await finalAnswer({ ...setup, store, scope, sessionId: session.id }, runId);
      return output === null ? null : { ...output, model };
    },
  });
  /** Only a choice among several models needs the session read before its turn. */
  const oneModel = Object.keys(spec.available).length === 1 && Object.keys(spec.agents).length === 0;
  const modelOfTurn = async (scope: Scope, session: SessionRef): Promise<string> => {
    if (oneModel) return spec.default;
    const read = isWholeSession(session) ? session : await store.getSession(scope, session.id);
    // A session not found is the runtime's to answer (`not_found`, under its lease).
    if (read === null) return spec.default;
    const name = modelFor(read);
    checkModelName(spec, name, `session ${session.id}: its model (context.model)`);
    return name;
  };
  return {
    agentNames: () => setup.agents.names(),
    modelNames: () => Object.keys(spec.available),
    modelFor,
    async runTurn(scope, session, input, call = {}) {
      const model = await modelOfTurn(scope, session);
      const onRun = {
        ...(call.onRun === undefined ? {} : { onRun: call.onRun }),
        ...(call.requestKey === undefined ? {} : { requestKey: call.requestKey }),
      };
      const attempt = async (waitMs: number) =>
        response(
          await scheduled(
            (options) => runTurn({ ...options, input, model, ...onRun, lease: { ...setup.lease, waitMs } }),
            scope,
            session,
          ),
          model,
        );
      let answered: TurnResponse;
      try {
        answered = await attempt(setup.lease?.waitMs ?? 0);
      } catch (error) {
        if (!isBusy(error)) throw error;
        const policy = call.onBusy ?? sessionOnBusy(await store.getSession(scope, session.id));
        if (policy === 'reject') throw error;
        if (policy === 'enqueue') {
          const item = await enqueueInput(store, scope, session.id, input, call.requestKey);
          const turns = queueTurns(scope, session, model);
          const waiting = {
            waitMs: ENQUEUE_WAIT_MS,
            ...(call.onRun === undefined ? {} : { onRun: call.onRun }),
          };
          const output = await queues.run(session.id, () => answerQueued(store, scope, item, turns, waiting));
          return response(output, model);
        }
        await interruptRun(store, scope, session.id);
        return attempt(INTERRUPT_WAIT_MS);
      }
      // Input queued while this turn ran, whose caller is gone (a crash), runs now, in order.
      if (answered.session?.context.on_busy === 'enqueue') {
        void queues
          .run(session.id, () => drainQueue(store, scope, session.id, queueTurns(scope, session, model)))
          .catch(() => undefined);
      }
      return answered;
    },
    async resume(scope, session) {
      const model = await modelOfTurn(scope, session);
      const output = await scheduled((options) => resumeRun({ ...options, model }), scope, session);
      if (output === null) {
        throw new AgentStateError(
          'conflict',
          `session ${session.id} has no run to resume: send a turn first`,
          {
            details: { session_id: session.id },
          },
        );
      }
      return response(output, model);
    },
    async openTasks(session) {
      const owner = { tenant_id: session.tenant_id, user_id: session.user_id };
      const own = await store.listTasks(owner, {
        session_id: session.id,
        state: OPEN_TASK_STATES,
        limit: OPEN_TASKS_SHOWN,
      });
      const name = session.agent ?? setup.agent;
      const agent = name === undefined ? undefined : setup.agents.get(name);
      if (agent === undefined || session.status === 'ended' || session.status === 'expired') return own.items;
      const next = await loadSnapshot(store, owner, session.id, agent, session);
      const carried = next.tasks.filter((task) => task.session_id !== session.id);
      return [...own.items, ...carried.slice(0, Math.max(0, OPEN_TASKS_SHOWN - own.items.length))];
    },
    /**
     * What a model call of the session's next turn would see: built as the runtime builds it, with the
     * agent's instructions, the open tasks the turn would load (this session's and orphans it would take
     * over) and what each task still misses.
     */
    async context(scope, session, maxTokens) {
      const name = session.agent ?? setup.agent;
      const agent = name === undefined ? undefined : setup.agents.get(name);
      const owner = { tenant_id: session.tenant_id, user_id: session.user_id };
      const built =
        agent === undefined
          ? await buildContext({ store, scope, sessionId: session.id, maxTokens })
          : await buildContext({
              store,
              scope: owner,
              sessionId: session.id,
              maxTokens,
              instructions: agent.description,
              tasks: (await loadSnapshot(store, owner, session.id, agent, session)).tasks,
              taskTypes: taskTypesFrom(agent.taskTypes),
            });
      return { ...built, messages: built.messages.map((m) => ({ ...m })), model: modelFor(session) };
    },
    async checkpoints(scope, session, limit, before): Promise<Page<Checkpoint>> {
      const all: Checkpoint[] = [];
      for (const run of await listSessionRuns(store, scope, session.id, RUNS_SCANNED)) {
        all.push(...(await store.listCheckpoints(scope, run.run_id, { limit: 500 })).items);
      }
      all.sort((a, b) =>
        a.created_at === b.created_at ? b.step - a.step : a.created_at < b.created_at ? 1 : -1,
      );
      const found = before === null ? -1 : all.findIndex((c) => c.id === before);
      if (before !== null && found < 0) return { items: [], next_cursor: null };
      const start = found + 1;
      const items = all.slice(start, start + limit);
      const last = items.at(-1);
      return { items, next_cursor: start + limit < all.length && last ? last.id : null };
    },
  };
}
