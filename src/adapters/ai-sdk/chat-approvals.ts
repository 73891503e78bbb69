/**
 * Tool calls that need a person's approval (AI SDK 6 `needsApproval`), kept in the store: a call whose
 * part is `approval-requested` is an action of the chat's session (type `ai_sdk_approval`, the tool's name
 * and input, an idempotency key from the chat and the tool call id) that stays PENDING until someone
 * decides, under a task of its own whose status line says it waits for approval; the session waits for its
 * user meanwhile (`waiting_for_user`, with that status's longer TTL).
 *
 * The decision is the action's outcome: SUCCESS `{ approved: true }` or FAILED with code `denied` (the
 * reason as its message). It comes from the chat (the client's `approval-responded` part), from
 * `resolveApproval`, or from anyone who may resolve the action (`PATCH /v1/actions/{id}`, the inspector).
 * The first decision recorded wins: the chat's part is made to match it before the model sees it, and the
 * approval's task ends (DONE approved, CANCELLED denied).
 */
import { createHash } from 'node:crypto';
import { getToolOrDynamicToolName, isToolUIPart, type UIMessage } from 'ai';
import { AgentStateError, invalidRequest, isAgentStateError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import type { JsonObject, JsonValue } from '../../core/json.js';
import type { Action } from '../../core/model.js';
import { sessionStatusPatch } from '../../lifecycle/session-policy.js';
import type { NewAction, NewMessage, NewTask, TurnBatch } from '../../store/types.js';
import { plainJson, type UIPart } from './chat-records.js';
import { type ChatEnv, requireChat } from './chat-session.js';

export const APPROVAL_ACTION_TYPE = 'ai_sdk_approval';
export const APPROVAL_TASK_TYPE = 'ai_sdk_approval';
/** The reason given for approvals a new user message leaves unanswered. */
export const UNANSWERED_APPROVAL = 'The user sent a new message instead of answering.';
/** The error of a call that was approved but never ran: the chat went on with a new message first. */
export const APPROVED_NOT_RUN = 'The tool call was approved, but the chat went on before it ran.';

export interface ApprovalDecision {
  readonly approved: boolean;
  readonly reason?: string;
}

/** A tool call of the chat's last answer that needs (or needed) a person's approval. */
export interface ChatApproval {
  readonly actionId: string;
  readonly approvalId: string;
  readonly toolCallId: string;
  readonly toolName: string;
  readonly input: JsonValue;
  /** The decision recorded in the store; null while the call waits for a person. */
  readonly decision: ApprovalDecision | null;
}

type ToolPart = Extract<UIPart, { toolCallId: string }>;
type Approval = { id: string; approved?: boolean; reason?: string };

/** Parts with an approval that the chat has not carried out yet (requested, or answered but not run). */
function openApproval(part: UIPart): part is ToolPart & { approval: Approval } {
  return isToolUIPart(part) && (part.state === 'approval-requested' || part.state === 'approval-responded');
}

export function approvalKey(chatId: string, toolCallId: string): string {
  return `ai-sdk-approval:${chatId}:${toolCallId}`;
}

function approvalTaskId(env: ChatEnv, chatId: string, toolCallId: string): string {
  const bytes = createHash('sha256')
    .update(`ai-sdk-approval\n${env.scope.tenant_id}\n${env.scope.user_id}\n${chatId}\n${toolCallId}`)
    .digest();
  return newId('task', () => bytes.subarray(0, 16));
}

/** The decision an action holds: null while it is PENDING (or UNKNOWN: no one decided). */
export function decisionOf(action: Action): ApprovalDecision | null {
  if (action.status === 'SUCCESS') {
    const result = action.result;
    const said = result !== null && typeof result === 'object' && !Array.isArray(result) ? result : {};
    const reason = typeof said.reason === 'string' ? said.reason : undefined;
    return { approved: said.approved !== false, ...(reason === undefined ? {} : { reason }) };
  }
  if (action.status === 'FAILED') {
    const reason = action.error?.message ?? action.note ?? undefined;
    return { approved: false, ...(reason === undefined ? {} : { reason }) };
  }
  return null;
}

/** The task and action that stand for the approval of `part`. */
function approvalRecords(
  env: ChatEnv,
  chatId: string,
  messageId: string,
  part: ToolPart & { approval: Approval },
) {
  const toolName = getToolOrDynamicToolName(part);
  const taskId = approvalTaskId(env, chatId, part.toolCallId);
  const task: NewTask = {
    id: taskId,
    session_id: chatId,
    type: APPROVAL_TASK_TYPE,
    state: 'EXECUTING',
    status_line: `waiting for approval: ${toolName}`,
    data: {
      chat_id: chatId,
      message_id: messageId,
      tool_call_id: part.toolCallId,
      approval_id: part.approval.id,
    },
  };
  const action: NewAction = {
    task_id: taskId,
    session_id: chatId,
    type: APPROVAL_ACTION_TYPE,
    tool: toolName,
    params: plainJson((part.input ?? null) as JsonValue),
    idempotency_key: approvalKey(chatId, part.toolCallId),
  };
  return { task, action };
}

/** The batch that records the approvals `parts` request (none when they request none). */
async function approvalsBatch(
  env: ChatEnv,
  chatId: string,
  messageId: string,
  parts: readonly UIPart[],
): Promise<Pick<TurnBatch, 'create_tasks' | 'begin_actions'>> {
  const requested = parts.filter(openApproval);
  const create_tasks: NewTask[] = [];
  const begin_actions: NewAction[] = [];
  for (const part of requested) {
    const { task, action } = approvalRecords(env, chatId, messageId, part);
    if ((await env.store.getTask(env.scope, task.id as string)) === null) create_tasks.push(task);
    begin_actions.push(action);
  }
  return { create_tasks, begin_actions };
}

/**
 * Appends `record` (parts of message `messageId`): with the approvals those parts request recorded in the
 * same commit, and the session moved to `waiting_for_user`.
 */
export async function saveWithApprovals(
  env: ChatEnv,
  chatId: string,
  messageId: string,
  record: NewMessage,
  parts: readonly UIPart[],
): Promise<void> {
  if (!parts.some((part) => isToolUIPart(part) && part.state === 'approval-requested')) {
    await env.store.appendMessages(env.scope, chatId, [record]);
    return;
  }
  const records = await approvalsBatch(env, chatId, messageId, parts);
  for (let attempt = 0; ; attempt++) {
    const session = await requireChat(env, chatId);
    const patch = session.status === 'waiting_for_user' ? null : waitingPatch(env, session, true);
    try {
      await env.store.commitTurn(env.scope, {
        ...records,
        messages: { session_id: chatId, items: [record] },
        ...(patch === null ? {} : { session: { id: chatId, expected_version: session.version, patch } }),
      });
      return;
    } catch (error) {
      if (!isAgentStateError(error, 'version_conflict') || attempt >= 8) throw error;
    }
  }
}

function waitingPatch(env: ChatEnv, session: Parameters<typeof sessionStatusPatch>[0], waiting: boolean) {
  return sessionStatusPatch(session, waiting ? 'waiting_for_user' : 'active', {
    ...(env.ttlSeconds === undefined ? {} : { ttlSeconds: env.ttlSeconds }),
    ...(env.waitingTtlSeconds === undefined ? {} : { waitingTtlSeconds: env.waitingTtlSeconds }),
  });
}

/** Moves the chat's session to `waiting_for_user` (waiting) or back to `active` (not), when it is not there. */
export async function settleChatStatus(env: ChatEnv, chatId: string, waiting: boolean): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const session = await requireChat(env, chatId);
    const target = waiting ? 'waiting_for_user' : 'active';
    if (session.status === target || (!waiting && session.status !== 'waiting_for_user')) return;
    try {
      await env.store.updateSession(env.scope, chatId, session.version, waitingPatch(env, session, waiting));
      return;
    } catch (error) {
      if (!isAgentStateError(error, 'version_conflict') || attempt >= 8) throw error;
    }
  }
}

/** The approval's action, recorded now if nothing recorded it (a message stored before approvals were). */
async function actionOf(
  env: ChatEnv,
  chatId: string,
  messageId: string,
  part: ToolPart & { approval: Approval },
): Promise<Action> {
  const key = approvalKey(chatId, part.toolCallId);
  const known = await env.store.getActionByKey(env.scope, key);
  const { task, action } = approvalRecords(env, chatId, messageId, part);
  const taskNow = await env.store.getTask(env.scope, task.id as string);
  const asked = taskNow?.data.approval_id;
  if (typeof asked === 'string' && asked !== part.approval.id)
    throw invalidRequest(
      `chat ${chatId}: tool call ${part.toolCallId} asked for approval ${asked}, not ${part.approval.id}`,
    );
  if (known !== null) return known;
  if (taskNow === null) await env.store.createTask(env.scope, task);
  return (await env.store.beginAction(env.scope, action)).action;
}

/** Records `decision` on a PENDING (or UNKNOWN) approval; the decision it already holds otherwise. */
export async function recordDecision(
  env: ChatEnv,
  action: Action,
  decision: ApprovalDecision,
  by: string,
): Promise<ApprovalDecision> {
  const known = decisionOf(action);
  if (known !== null) return known;
  const result: JsonObject = { approved: true };
  if (decision.reason !== undefined) result.reason = decision.reason;
  const note = `${decision.approved ? 'approved' : 'denied'} ${by}${decision.reason ? `: ${decision.reason}` : ''}`;
  const resolved = await env.store.resolveAction(
    env.scope,
    action.id,
    decision.approved
      ? { status: 'SUCCESS', result, note }
      : {
          status: 'FAILED',
          error: { code: 'denied', message: decision.reason ?? 'The tool call was denied.' },
          note,
        },
  );
  return decisionOf(resolved) ?? decision;
}

/** Ends the approval's task once its decision reached the chat. */
async function closeTask(env: ChatEnv, action: Action, decision: ApprovalDecision): Promise<void> {
  const task = await env.store.getTask(env.scope, action.task_id);
  if (task === null || task.state !== 'EXECUTING') return;
  await env.store
    .updateTask(env.scope, task.id, task.version, {
      state: decision.approved ? 'DONE' : 'CANCELLED',
      status_line: `${decision.approved ? 'approved' : 'denied'}: ${action.tool ?? 'tool call'}`,
      cause: decision.approved ? 'the tool call was approved' : 'the tool call was denied',
    })
    .catch((error: unknown) => {
      if (!isAgentStateError(error, 'version_conflict')) throw error;
    });
}

function withDecision(part: ToolPart & { approval: Approval }, decision: ApprovalDecision): UIPart {
  const approval = {
    ...part.approval,
    approved: decision.approved,
    ...(decision.reason === undefined ? {} : { reason: decision.reason }),
  };
  return { ...part, state: 'approval-responded', approval } as UIPart;
}

/**
 * How `applyDecisions` treats the approvals of the message: `continue` (the chat continues this message:
 * the client's answers are recorded), `close` (a new user message follows: unanswered approvals are
 * denied and answered ones that never ran are closed), `read` (shows decisions, records nothing).
 */
export type ApprovalMode = 'continue' | 'close' | 'read';

/** The message with the store's decisions on its open approvals, and how many still wait for one. */
export async function applyDecisions(
  env: ChatEnv,
  chatId: string,
  message: UIMessage,
  mode: ApprovalMode,
): Promise<{ message: UIMessage; changed: boolean; waiting: ChatApproval[] }> {
  if (message.role !== 'assistant' || !message.parts.some(openApproval))
    return { message, changed: false, waiting: [] };
  const parts: UIPart[] = [];
  const waiting: ChatApproval[] = [];
  let changed = false;
  for (const part of message.parts) {
    if (!openApproval(part)) {
      parts.push(part);
      continue;
    }
    const action =
      mode === 'read'
        ? await env.store.getActionByKey(env.scope, approvalKey(chatId, part.toolCallId))
        : await actionOf(env, chatId, message.id, part);
    let decision = action === null ? null : decisionOf(action);
    const answered = part.state === 'approval-responded' && typeof part.approval.approved === 'boolean';
    if (mode !== 'read' && action !== null && decision === null && (answered || mode === 'close')) {
      const given: ApprovalDecision = answered
        ? {
            approved: part.approval.approved === true,
            ...(part.approval.reason === undefined ? {} : { reason: part.approval.reason }),
          }
        : { approved: false, reason: UNANSWERED_APPROVAL };
      decision = await recordDecision(env, action, given, answered ? 'in the chat' : 'by a new message');
    }
    if (decision === null) {
      if (action !== null) waiting.push(approvalOf(action, part, null));
      parts.push(part);
      continue;
    }
    if (mode !== 'read' && action !== null) await closeTask(env, action, decision);
    let next = withDecision(part, decision);
    if (mode === 'close') next = closedPart(part, decision);
    changed ||= JSON.stringify(next) !== JSON.stringify(part);
    parts.push(next);
  }
  return { message: changed ? { ...message, parts } : message, changed, waiting };
}

/** A decided approval the chat will not carry out (a new message came first), as the model accepts it. */
function closedPart(part: ToolPart & { approval: Approval }, decision: ApprovalDecision): UIPart {
  const approval = {
    ...part.approval,
    approved: decision.approved,
    ...(decision.reason === undefined ? {} : { reason: decision.reason }),
  };
  if (!decision.approved) return { ...part, state: 'output-denied', approval } as UIPart;
  return { ...part, state: 'output-error', errorText: APPROVED_NOT_RUN, approval } as UIPart;
}

export function approvalOf(
  action: Action,
  part: ToolPart & { approval: Approval },
  decision: ApprovalDecision | null,
): ChatApproval {
  return {
    actionId: action.id,
    approvalId: part.approval.id,
    toolCallId: part.toolCallId,
    toolName: getToolOrDynamicToolName(part),
    input: plainJson((part.input ?? null) as JsonValue),
    decision,
  };
}

/** The approvals of the chat's last answer that the chat has not carried out, with their decisions. */
export async function listApprovals(
  env: ChatEnv,
  chatId: string,
  last: UIMessage | undefined,
): Promise<ChatApproval[]> {
  if (last === undefined || last.role !== 'assistant') return [];
  const out: ChatApproval[] = [];
  for (const part of last.parts) {
    if (!openApproval(part)) continue;
    const action = await env.store.getActionByKey(env.scope, approvalKey(chatId, part.toolCallId));
    if (action !== null) out.push(approvalOf(action, part, decisionOf(action)));
  }
  return out;
}

/** Checks what `resolveApproval` was given. */
export function checkDecision(input: unknown): { approvalId: string } & ApprovalDecision {
  const given = (input ?? {}) as JsonObject;
  if (typeof given.approvalId !== 'string' || given.approvalId === '')
    throw invalidRequest('resolveApproval: approvalId must be the id of an approval request');
  if (typeof given.approved !== 'boolean')
    throw invalidRequest('resolveApproval: approved must be a boolean');
  if (given.reason !== undefined && typeof given.reason !== 'string')
    throw invalidRequest('resolveApproval: reason must be a string when given');
  return {
    approvalId: given.approvalId,
    approved: given.approved,
    ...(given.reason === undefined ? {} : { reason: given.reason }),
  };
}

export function approvalConflict(chatId: string, approval: ChatApproval, wanted: boolean): AgentStateError {
  const was = approval.decision?.approved ? 'approved' : 'denied';
  return new AgentStateError(
    'conflict',
    `chat ${chatId}: approval ${approval.approvalId} was already ${was}; it cannot be ${wanted ? 'approved' : 'denied'} now`,
    { details: { chat_id: chatId, action_id: approval.actionId } },
  );
}
