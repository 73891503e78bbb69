/**
 * One turn of an agent written as code on the durable kernel (`Agent.run`): the turn hands its input to the
 * agent's run (`durableRun`, named after the agent) and answers with what the run says: its result when it
 * finished, its prompt when it waits for more input (the session's next turn brings it, on any instance),
 * or why it stopped. The run keeps its own journal and checkpoints, under the lease the turn holds.
 *
 * The turn records which run it feeds (the session's open run of the agent, else a new one keyed by the
 * turn's run id) and how many inputs that run had kept, with a checkpoint before it calls it: a turn
 * resumed after a crash gives the input again only when the run has not kept it (never twice, never
 * lost), and the run replays what it recorded, so no effect happens twice.
 */
import { AgentStateError } from '../core/errors.js';
import type { JsonValue } from '../core/json.js';
import type { Session } from '../core/model.js';
import { isRunTask, journalOf, keyedTaskId } from '../durable/header.js';
import { durableRun } from '../durable/run.js';
import type { DurableResult } from '../durable/types.js';
import type { Language } from '../models/types.js';
import type { Agent } from './agent.js';
import { commitFinal, sessionMove, turnMessages } from './final-commit.js';
import type { HeldLease } from './lease.js';
import { chooseLanguage } from './locale.js';
import { ANSWER_OPEN_TASKS, type ProgramEnv, type ProgramResult } from './program.js';
import type { CommitBatch, RunContext } from './run-context.js';
import { loadSnapshot, type Snapshot } from './snapshot.js';

function json<T>(value: T): JsonValue {
  return value as unknown as JsonValue;
}

/** The key of the session's open run of the agent (waiting for input, or blocked), if there is one. */
async function openRunKey(rt: RunContext, agent: Agent): Promise<string | null> {
  const open = await rt.store.listTasks(rt.scope, {
    session_id: rt.header.session_id,
    type: agent.name,
    state: 'EXECUTING',
    limit: 50,
  });
  const key = open.items.filter(isRunTask).at(-1)?.data.key;
  return typeof key === 'string' ? key : null;
}

/** How many inputs the run (named by `key`) has taken for good: its stored journal's `input` entries. */
async function inputsTaken(rt: RunContext, agent: Agent, key: string): Promise<number> {
  const { scope, store } = rt;
  const task = await store.getTask(scope, keyedTaskId(scope, rt.header.session_id, agent.name, key));
  if (task === null || !isRunTask(task)) return 0;
  const checkpoint = await store.latestCheckpoint(scope, String(task.data.run_id));
  if (checkpoint === null) return 0;
  return journalOf(checkpoint).filter((entry) => entry.k === 'input').length;
}

/** The turn's reply: the run's result, its question, or why it stopped. */
function replyOf(outcome: DurableResult<JsonValue>, language: Language): string {
  const zh = language === 'zh';
  switch (outcome.status) {
    case 'done': {
      const { value } = outcome;
      if (typeof value === 'string') return value;
      if (
        value !== null &&
        typeof value === 'object' &&
        !Array.isArray(value) &&
        typeof value.reply === 'string'
      )
        return value.reply;
      return JSON.stringify(value);
    }
    case 'waiting':
      return outcome.prompt ?? (zh ? '请继续。' : 'Go on.');
    case 'blocked':
      return zh
        ? `操作 ${outcome.action_id} 的结果未知（${outcome.note}），需要人工确认后才能继续。`
        : `I could not confirm whether action ${outcome.action_id} took effect (${outcome.note}); a person must resolve it before I go on.`;
    case 'failed':
      return zh ? `运行失败：${outcome.error.message}` : `The run failed: ${outcome.error.message}`;
  }
}

export async function runKernelProgram(
  rt: RunContext,
  env: ProgramEnv & { readonly lease: HeldLease },
): Promise<ProgramResult> {
  const { agent } = env;
  const code = agent.run;
  if (code === undefined) throw new AgentStateError('internal', `agent ${agent.name} has no code to run`);
  const { input, session_id: sessionId } = rt.header;
  const snap = (await rt.read('load', async () =>
    json(
      await loadSnapshot(rt.store, rt.scope, sessionId, agent, env.session ?? null, env.openTasks ?? null),
    ),
  )) as unknown as Snapshot;
  const language = chooseLanguage(snap.session.context, input);
  const key = (await rt.read(
    'agent.key',
    async () => (await openRunKey(rt, agent)) ?? rt.header.run_id,
  )) as string;
  // What the run had taken before this turn called it, recorded with a checkpoint before the call: a turn
  // resumed after a crash gives the input again only if the run has not kept it since (an input is never
  // taken twice, nor lost).
  const before = (await rt.read('agent.inputs', () => inputsTaken(rt, agent, key))) as number;
  const { replayed } = await rt.commit('agent.call', null, null);
  const give = !replayed || (await inputsTaken(rt, agent, key)) === before;
  const outcome = (await rt.read('agent.run', async () =>
    json(
      await durableRun(
        rt.store,
        {
          scope: rt.scope,
          sessionId,
          name: agent.name,
          key,
          ...(give ? { input, inputToInterrupted: true } : {}),
          retry: env.policy,
          clock: rt.clock,
          lease: { held: env.lease },
          // The code's task and action events stream in the turn's run.
          ...(rt.events === null ? {} : { eventLog: rt.events }),
        },
        (ctx) => code(ctx, { model: env.model, tools: env.tools }),
      ),
    ),
  )) as unknown as DurableResult<JsonValue>;

  // Read after the run's last commit but the final one: nothing here is replayed. The run's commits wrote
  // its task: the answer shows it as they left it.
  const task = await rt.store.getTask(rt.scope, outcome.task_id);
  if (task !== null) rt.written.tasks.set(task.id, task);
  const actions = (await rt.store.listActions(rt.scope, { task_id: outcome.task_id, limit: 100 })).items;
  const reply = replyOf(outcome, language);
  if (outcome.status === 'waiting')
    rt.events?.add('run.waiting', { task_id: outcome.task_id, reason: 'input', prompt: outcome.prompt });
  const output = {
    reply,
    language,
    task_ids: [outcome.task_id],
    action_ids: [...actions].sort((a, b) => a.created_at.localeCompare(b.created_at)).map((a) => a.id),
  };
  // The run moved the session (waiting for its user, or back): the final commit starts from it as it is.
  const now = (await rt.store.getSession(rt.scope, sessionId)) ?? snap.session;
  const status = now.status === 'waiting_for_user' ? 'waiting_for_user' : 'active';
  const finalBatch = (current: Session): CommitBatch => ({
    ...sessionMove(current, status, agent.name),
    list_open_tasks: { session_id: sessionId, limit: ANSWER_OPEN_TASKS },
    messages: turnMessages(rt, reply, output.task_ids),
  });
  const committed = await commitFinal(rt, now, null, { output }, finalBatch);
  return { ...output, checkpoint_id: committed.checkpoint_id, final: committed };
}
