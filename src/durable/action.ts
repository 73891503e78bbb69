/**
 * One action of a durable run, on the runtime's own parts: the PENDING action is written with a
 * checkpoint in one commit before `run` is called (`RunContext.commit`), the call and its retries and the
 * recovery of an unknown outcome through `lookup` are `executeAction` and `recoverAction`, and the outcome
 * is recorded in the journal and written with the next checkpoint.
 *
 * On a replay the begin commit is replayed; the outcome comes from the journal when it was recorded, else
 * from the action as the store holds it: PENDING (the process died during the call) is recovered through
 * `lookup`, UNKNOWN stops the run until a person resolves it, SUCCESS or FAILED (resolved) is taken as is.
 */
import { createHash } from 'node:crypto';
import { AgentStateError } from '../core/errors.js';
import { canonicalJson, type JsonObject, type JsonValue } from '../core/json.js';
import { type Action, JsonValueSchema } from '../core/model.js';
import { inSpan, linksTo, type Span } from '../observability/tracing.js';
import { executeAction, type RetryPolicy, recoverAction, type ToolOutcome } from '../runtime/actions.js';
import type { CommitBatch, RunContext, RunIdentity } from '../runtime/run-context.js';
import type { LookupResult, Tool } from '../runtime/tool.js';
import type { Scope, StateStore } from '../store/types.js';
import { type Codec, decodeRecorded } from './codec.js';
import { ActionFailedError, RunPaused } from './signals.js';
import type { ActionHandlers } from './types.js';

/** The recorded outcome: `complete` when the action was still PENDING and the next commit completes it. */
type Recorded =
  | { readonly status: 'SUCCESS'; readonly result: JsonValue; readonly complete: boolean }
  | {
      readonly status: 'FAILED';
      readonly code: string;
      readonly message: string;
      readonly complete: boolean;
    };

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

/** A known outcome to record, or (unknown) the action marked UNKNOWN and the run stopped. */
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
  if (now !== null && now.status === 'PENDING') await store.markActionUnknown(scope, action.id, outcome.note);
  throw new RunPaused({ kind: 'blocked', actionId: action.id, note: outcome.note });
}

function isRecorded(value: JsonValue): value is JsonObject & Recorded {
  return (
    value !== null &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    (value.status === 'SUCCESS' || value.status === 'FAILED') &&
    typeof value.complete === 'boolean'
  );
}

/**
 * The action in its span (`agentstate.action <name>`), the begin commit included: the journal's marker of
 * that commit keeps this span's traceparent, and an attempt that recovers the action links to it.
 */
export function runAction<R>(
  env: ActionEnv,
  ordinal: number,
  name: string,
  params: JsonValue,
  handlers: ActionHandlers<R>,
  codec: Codec<R>,
): Promise<R> {
  const attributes = {
    'agentstate.action.tool': name,
    'agentstate.action.ordinal': ordinal,
    'agentstate.task.id': env.taskId,
    'agentstate.run.id': env.rt.header.run_id,
  };
  return inSpan(`agentstate.action ${name}`, attributes, (span) =>
    runActionNow(env, ordinal, name, params, handlers, codec, span),
  );
}

async function runActionNow<R>(
  env: ActionEnv,
  ordinal: number,
  name: string,
  params: JsonValue,
  handlers: ActionHandlers<R>,
  codec: Codec<R>,
  span: Span,
): Promise<R> {
  const { rt, policy, taskId } = env;
  const { store, scope } = rt;
  const { session_id: sessionId } = rt.header;
  const key = durableActionKey(taskId, ordinal, name, params);
  const begin = {
    task_id: taskId,
    session_id: sessionId,
    type: 'durable_action',
    tool: name,
    params,
    idempotency_key: key,
  };
  const { result, replayed, recordedBy } = await rt.commit(
    `before ${name}`,
    { ...env.withBegin, begin_actions: [begin] },
    taskId,
  );
  const begun = result.actions.find((action) => action.idempotency_key === key);
  if (begun === undefined)
    throw new AgentStateError('internal', `the store returned no action for key ${key}`);
  span.setAttributes({
    'agentstate.action.id': begun.id,
    'agentstate.action.idempotency_key': key,
    'agentstate.action.replayed': replayed,
  });
  const runner = { store, scope, tool: asTool(name, handlers, codec), policy };

  const recorded = await rt.read(`action:${name}`, async (): Promise<JsonObject & Recorded> => {
    if (!replayed && begun.status === 'PENDING')
      return settle(await executeAction(runner, begun), begun, store, scope);
    const action = (await store.getAction(scope, begun.id)) ?? begun;
    if (action.status === 'SUCCESS') return { status: 'SUCCESS', result: action.result, complete: false };
    if (action.status === 'FAILED') {
      const error = action.error ?? { code: 'failed', message: action.note ?? 'the action failed' };
      return { status: 'FAILED', code: error.code, message: error.message, complete: false };
    }
    if (action.status === 'UNKNOWN') {
      throw new RunPaused({ kind: 'blocked', actionId: action.id, note: action.note ?? 'outcome unknown' });
    }
    const why = 'the run stopped during this call';
    span.setAttribute('agentstate.action.recovering', true);
    for (const link of linksTo(recordedBy, 'recorded_by')) span.addLink(link);
    return settle(await recoverAction(runner, action, action.attempts, why), action, store, scope);
  });
  if (!isRecorded(recorded))
    throw new AgentStateError('internal', `action ${name}: the recorded outcome is malformed`);
  span.setAttribute('agentstate.action.status', recorded.status);

  const completion =
    recorded.status === 'SUCCESS'
      ? { id: begun.id, status: 'SUCCESS' as const, result: recorded.result }
      : {
          id: begun.id,
          status: 'FAILED' as const,
          error: { code: recorded.code, message: recorded.message },
        };
  await rt.commit(`after ${name}`, recorded.complete ? { complete_actions: [completion] } : null, taskId);
  if (recorded.status === 'FAILED') throw new ActionFailedError(begun.id, recorded.code, recorded.message);
  return decodeRecorded(codec, recorded.result, `action ${name}`);
}
