/**
 * One action, on the runtime's own parts, whichever agent asks for it (a durable run's `ctx.action`, the
 * tool-loop agent on it, the slot-filling program's steps): the PENDING action is written with a checkpoint
 * in one commit before the tool is called (`RunContext.commit`), the call and its retries and the recovery
 * of an unknown outcome through `lookup` are `executeAction` and `recoverAction`, an outcome neither done
 * nor known not done marks the action UNKNOWN for a person, and the outcome is recorded in the journal and
 * written with the next checkpoint (an `after` commit, or the caller's own).
 *
 * On a replay the begin commit is replayed; the outcome comes from the journal when it was recorded, else
 * from the action as the store holds it: PENDING (the process died during the call) is recovered through
 * `lookup`, UNKNOWN stops the run until a person resolves it, SUCCESS or FAILED (resolved) is taken as is.
 * An action the caller found already (`existing`: an earlier turn's) is taken the same way, begun no more.
 */
import { createHash } from 'node:crypto';
import { AgentStateError } from '../core/errors.js';
import { canonicalJson, type JsonObject, type JsonValue } from '../core/json.js';
import { type Action, JsonValueSchema } from '../core/model.js';
import { inSpan, linksTo, type Span } from '../observability/tracing.js';
import { executeAction, type RetryPolicy, recoverAction, type ToolOutcome } from '../runtime/actions.js';
import type { CommitBatch, RunContext, RunIdentity } from '../runtime/run-context.js';
import type { LookupResult, Tool } from '../runtime/tool.js';
import type { ActionCompletion, Scope, StateStore } from '../store/types.js';
import { type Codec, decodeRecorded } from './codec.js';
import { ActionFailedError, RunPaused } from './signals.js';
import type { ActionHandlers } from './types.js';

/**
 * The recorded outcome: `complete` when the action was still PENDING and a commit completes it; UNKNOWN
 * when neither is known (the action marked so, for a person to resolve).
 */
type Recorded =
  | { readonly status: 'SUCCESS'; readonly result: JsonValue; readonly complete: boolean }
  | {
      readonly status: 'FAILED';
      readonly code: string;
      readonly message: string;
      readonly complete: boolean;
    }
  | { readonly status: 'UNKNOWN'; readonly note: string };

/** The idempotency key of the `ordinal`-th action of a run: the same in every attempt of the run. */
export function durableActionKey(taskId: string, ordinal: number, name: string, params: JsonValue): string {
  const digest = createHash('sha256')
    .update(`${taskId}\n${ordinal}\n${name}\n${canonicalJson(params)}`)
    .digest('base64url');
  return `${taskId}:${ordinal}:${digest.slice(0, 32)}`;
}

/** The handlers as a runtime tool, so the runtime's retry and recovery rules apply to them unchanged. */
function asTool<R>(name: string, handlers: ActionHandlers<R>, codec: Codec<R>): Tool {
  const { lookup } = handlers;
  return {
    name,
    description: `durable action ${name}`,
    params: JsonValueSchema,
    execute: async (_params, call) =>
      codec.encode(
        await handlers.run(call.idempotencyKey, {
          idempotencyKey: call.idempotencyKey,
          signal: call.signal,
          attempt: call.attempt,
        }),
      ),
    ...(lookup === undefined
      ? {}
      : {
          lookup: async (key: string): Promise<LookupResult> => {
            const answer = await lookup(key);
            return answer.found === true ? { found: true, result: codec.encode(answer.result) } : answer;
          },
        }),
  };
}

export interface ActionEnv {
  readonly rt: RunContext<RunIdentity>;
  /** The task the run's actions belong to. */
  readonly taskId: string;
  readonly policy: RetryPolicy;
  /** Written with the commit that begins the action (the run's task, with its first action). */
  readonly withBegin?: CommitBatch | null;
}

/**
 * One action as any agent asks for it: the tool, its params and idempotency key, and how it joins the
 * agent's commits. A durable run's `ctx.action` and the slot-filling program's steps both come here.
 */
export interface ActionRequest {
  readonly rt: RunContext<RunIdentity>;
  readonly policy: RetryPolicy;
  /** The task the action belongs to. */
  readonly taskId: string;
  /** The action's place among its task's actions (traced). */
  readonly ordinal: number;
  readonly tool: Tool;
  readonly params: JsonValue;
  /** The same in every attempt of the run, and in every run that takes the action up again. */
  readonly key: string;
  /** The action's type as stored (`durable_action`, `tool_call`). */
  readonly type: string;
  /** The commits are labelled `before <label>` and (with `complete: 'after'`) `after <label>`. */
  readonly label: string;
  /** The journal kind its outcome is recorded under. */
  readonly kind: string;
  /** Written with the commit that begins the action. */
  readonly withBegin?: CommitBatch | null;
  /**
   * The action as the store already holds it (the caller looked its key up, recorded): none is begun; a
   * resolved one is taken as is, a PENDING one (a run stopped during its call) is recovered.
   */
  readonly existing?: Action | null;
  /**
   * Who writes the completion of an action this attempt settled: an `after <label>` commit made here (the
   * default; one is made, a checkpoint alone, when there is nothing to complete), or the caller, with a
   * commit of its own (`ActionEnd.completion`).
   */
  readonly complete?: 'after' | 'caller';
}

/** How an action ended; `completion`, when not null, is still to be written by a commit. */
export type ActionEnd =
  | {
      readonly status: 'SUCCESS';
      readonly action: Action;
      readonly result: JsonValue;
      readonly completion: Completion | null;
    }
  | {
      readonly status: 'FAILED';
      readonly action: Action;
      readonly code: string;
      readonly message: string;
      readonly completion: Completion | null;
    }
  | { readonly status: 'UNKNOWN'; readonly action: Action; readonly note: string };

export type Completion = { readonly id: string } & ActionCompletion;

/** A known outcome to record; an unknown one marks the action UNKNOWN (a person decides) and is recorded. */
async function settle(
  outcome: ToolOutcome,
  action: Action,
  store: StateStore,
  scope: Scope,
): Promise<JsonObject & Recorded> {
  if (outcome.status === 'SUCCESS') return { status: 'SUCCESS', result: outcome.result, complete: true };
  if (outcome.status === 'FAILED')
    return { status: 'FAILED', code: outcome.code, message: outcome.message, complete: true };
  // Neither done nor known not done: a person decides; the run goes on once the action is resolved.
  const now = await store.getAction(scope, action.id);
  const marked =
    now !== null && now.status === 'PENDING'
      ? await store.markActionUnknown(scope, action.id, outcome.note)
      : (now ?? action);
  return { status: 'UNKNOWN', note: marked.note ?? outcome.note };
}

/** The outcome of an action the store holds resolved (SUCCESS, FAILED, UNKNOWN), or null when PENDING. */
function resolved(action: Action): (JsonObject & Recorded) | null {
  if (action.status === 'SUCCESS') return { status: 'SUCCESS', result: action.result, complete: false };
  if (action.status === 'FAILED') {
    const error = action.error ?? { code: 'failed', message: action.note ?? 'the action failed' };
    return { status: 'FAILED', code: error.code, message: error.message, complete: false };
  }
  if (action.status === 'UNKNOWN') return { status: 'UNKNOWN', note: action.note ?? 'outcome unknown' };
  return null;
}

function isRecorded(value: JsonValue): value is JsonObject & Recorded {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  if (value.status === 'UNKNOWN') return typeof value.note === 'string';
  return (value.status === 'SUCCESS' || value.status === 'FAILED') && typeof value.complete === 'boolean';
}

/**
 * The recorded outcome; an outcome the slot-filling program recorded before it ran its steps here has no
 * `complete`: it was always an outcome found then, of a PENDING action (its `via` is left aside).
 */
function recordedOf(value: JsonValue): (JsonObject & Recorded) | null {
  const earlier =
    value !== null && typeof value === 'object' && !Array.isArray(value) && !('complete' in value)
      ? { ...value, complete: true }
      : value;
  return isRecorded(earlier) ? earlier : null;
}

/**
 * The action in its span (`agentstate.action <tool>`), the begin commit included: the journal's marker of
 * that commit keeps this span's traceparent, and an attempt that recovers the action links to it.
 */
export function performAction(request: ActionRequest): Promise<ActionEnd> {
  const attributes = {
    'agentstate.action.tool': request.tool.name,
    'agentstate.action.ordinal': request.ordinal,
    'agentstate.action.recovering': false,
    'agentstate.task.id': request.taskId,
    'agentstate.run.id': request.rt.header.run_id,
  };
  return inSpan(`agentstate.action ${request.tool.name}`, attributes, (span) => performNow(request, span));
}

async function performNow(request: ActionRequest, span: Span): Promise<ActionEnd> {
  const { rt, tool, key, taskId, label } = request;
  const { store, scope } = rt;
  let action: Action;
  let fresh = false;
  let recordedBy: string | undefined;
  if (request.existing != null) {
    action = request.existing;
  } else {
    const begin = {
      task_id: taskId,
      session_id: rt.header.session_id,
      type: request.type,
      tool: tool.name,
      params: request.params,
      idempotency_key: key,
    };
    const began = await rt.commit(
      `before ${label}`,
      { ...request.withBegin, begin_actions: [begin] },
      taskId,
    );
    const begun = began.result.actions.find((a) => a.idempotency_key === key);
    if (begun === undefined)
      throw new AgentStateError('internal', `the store returned no action for key ${key}`);
    action = begun;
    fresh = !began.replayed && begun.status === 'PENDING';
    recordedBy = began.recordedBy;
    span.setAttribute('agentstate.action.replayed', began.replayed);
  }
  span.setAttributes({ 'agentstate.action.id': action.id, 'agentstate.action.idempotency_key': key });
  const runner = { store, scope, tool, policy: request.policy };

  // An action found resolved is taken as is: the look-up that found it is recorded already.
  const outcome =
    (request.existing == null ? null : resolved(action)) ??
    (await rt.read(request.kind, async (): Promise<JsonObject & Recorded> => {
      if (fresh) return settle(await executeAction(runner, action), action, store, scope);
      const now = request.existing == null ? ((await store.getAction(scope, action.id)) ?? action) : action;
      const known = resolved(now);
      if (known !== null) return known;
      const why = 'the run stopped during this call';
      span.setAttribute('agentstate.action.recovering', true);
      for (const link of linksTo(recordedBy, 'recorded_by')) span.addLink(link);
      return settle(await recoverAction(runner, now, now.attempts, why), now, store, scope);
    }));
  const recorded = recordedOf(outcome);
  if (recorded === null)
    throw new AgentStateError('internal', `action ${tool.name}: the recorded outcome is malformed`);
  span.setAttribute('agentstate.action.status', recorded.status);
  if (recorded.status === 'UNKNOWN') {
    return {
      status: 'UNKNOWN',
      action: { ...action, status: 'UNKNOWN', note: recorded.note },
      note: recorded.note,
    };
  }
  const completion: Completion | null = !recorded.complete
    ? null
    : recorded.status === 'SUCCESS'
      ? { id: action.id, status: 'SUCCESS', result: recorded.result }
      : { id: action.id, status: 'FAILED', error: { code: recorded.code, message: recorded.message } };
  const end: ActionEnd =
    recorded.status === 'SUCCESS'
      ? { status: 'SUCCESS', action, result: recorded.result, completion }
      : { status: 'FAILED', action, code: recorded.code, message: recorded.message, completion };
  if (request.complete === 'caller') return end;
  await rt.commit(`after ${label}`, completion === null ? null : { complete_actions: [completion] }, taskId);
  return { ...end, completion: null };
}

/** A durable run's action (`ctx.action`): its value, or `ActionFailedError`, or the run paused (UNKNOWN). */
export async function runAction<R>(
  env: ActionEnv,
  ordinal: number,
  name: string,
  params: JsonValue,
  handlers: ActionHandlers<R>,
  codec: Codec<R>,
): Promise<R> {
  const end = await performAction({
    rt: env.rt,
    policy: env.policy,
    taskId: env.taskId,
    ordinal,
    tool: asTool(name, handlers, codec),
    params,
    key: durableActionKey(env.taskId, ordinal, name, params),
    type: 'durable_action',
    label: name,
    kind: `action:${name}`,
    withBegin: env.withBegin ?? null,
  });
  if (end.status === 'UNKNOWN')
    throw new RunPaused({ kind: 'blocked', actionId: end.action.id, note: end.note });
  if (end.status === 'FAILED') throw new ActionFailedError(end.action.id, end.code, end.message);
  return decodeRecorded(codec, end.result, `action ${name}`);
}
