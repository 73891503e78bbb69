/**
 * The task an input was routed to: extract with its pending question in mind, advance its state machine,
 * and write its transitions. Each transition is its own commit (a batch updates a task once); the last one
 * goes with the turn's messages, or, when the task is about to execute, with the begin of its first tool
 * call (`TargetResult.transition`, written by executeTask): one commit fewer per executing turn.
 */
import type { JsonObject, JsonValue } from '../core/json.js';
import type { Task, TaskState } from '../core/model.js';
import type { Extraction, Language, Model, OpenTaskInfo } from '../models/types.js';
import type { NewTask, TaskPatch } from '../store/types.js';
import { answerProposal, proposeFor, readProposals, remembers } from './memory-link.js';
import { askText, cancelledText, declinedText, errorsText } from './replies.js';
import type { RunContext } from './run-context.js';
import { type Advance, advance, type Reaction } from './state-machine.js';
import { statusLine } from './status.js';
import { type SlotError, type TaskType, taskTypeInfo } from './task-type.js';

export type Write =
  | { readonly kind: 'create'; readonly task: NewTask }
  | {
      readonly kind: 'update';
      readonly id: string;
      readonly expected_version: number;
      readonly patch: TaskPatch;
    };

/** A task update left to the next commit of the same task. */
export interface PendingTransition {
  readonly id: string;
  readonly expected_version: number;
  readonly patch: TaskPatch;
}

export function expectingOf(task: OpenTaskInfo | undefined): { type: string; slot: string } | null {
  return task?.missing[0] === undefined ? null : { type: task.type, slot: task.missing[0] };
}

function reactionText(type: TaskType, adv: Advance, language: Language): string {
  const { reaction, slots, errors } = adv;
  const problems = (sep: string) => (errors.length > 0 ? `${errorsText(errors, language)}${sep}` : '');
  switch (reaction.kind) {
    case 'ask':
      return askText(type, reaction.slot, errors as SlotError[], language);
    case 'confirm':
      return problems(' ') + type.confirmText(slots, language);
    case 'declined':
      return declinedText(language);
    case 'cancelled':
      return cancelledText(type, slots, language);
    default:
      return problems(' ') + statusLine(type, adv.state, slots);
  }
}

export interface TargetInput {
  readonly type: TaskType;
  /** null for a task this turn creates. */
  readonly task: Task | null;
  readonly taskId: string;
  readonly info: OpenTaskInfo | undefined;
  /** The first extraction; it was made with this task's question in mind when `focused`. */
  readonly extraction: Extraction;
  readonly focused: boolean;
  readonly sessionId: string;
  readonly model: Model;
  readonly base: { input: string; now: string; timezone: string; language: Language };
  readonly today: string;
}

export interface TargetResult {
  readonly reaction: Reaction;
  readonly state: TaskState;
  /** The task as it is after this function's own commits (null when it is still to be created). */
  readonly task: Task | null;
  /** The write that goes with the turn's messages, if any. */
  readonly write: Write | null;
  /**
   * The move to EXECUTING, not yet written, when the task executes this turn: executeTask writes it with its
   * first tool call's begin (`task` is then the task as that write will leave it, at its current version).
   */
  readonly transition: PendingTransition | null;
  /** What to say; null when the task executes this turn (execution reports instead). */
  readonly text: string | null;
}

export async function advanceTarget(rt: RunContext, input: TargetInput): Promise<TargetResult> {
  const { type, taskId, sessionId } = input;
  let extraction = input.extraction;
  if (input.info !== undefined && !input.focused && expectingOf(input.info) !== null) {
    extraction = (await rt.read(
      'model.extract',
      async () =>
        (await input.model.extract({
          ...input.base,
          taskTypes: [taskTypeInfo(type)],
          expecting: expectingOf(input.info),
        })) as unknown as JsonValue,
    )) as unknown as Extraction;
  }
  const start = input.task;
  let data: JsonObject = start?.data ?? {};
  if (start === null && remembers(type.name)) {
    const proposals = await readProposals(rt, type.name);
    if (proposals.length > 0) data = { ...data, proposals: proposals as unknown as JsonValue };
  }
  const answered = answerProposal(data, extraction.slots[type.name] ?? {}, extraction.answer);
  data = answered.data;
  const adv = advance(
    type,
    {
      state: start?.state ?? 'INIT',
      slots: start?.slots ?? {},
      found: answered.found,
      answer: extraction.answer,
      cancel: extraction.cancel,
    },
    { today: input.today },
  );
  const executes = adv.reaction.kind === 'execute';
  const adopt = start !== null && start.session_id !== sessionId ? { session_id: sessionId } : {};
  let current = start;
  const proposed = proposeFor(
    data,
    adv.reaction.kind === 'ask' ? adv.reaction.slot : null,
    input.base.language,
  );
  data = proposed.data;
  const writeFor = (state: TaskState | null, cause: string): Write => {
    const line = statusLine(type, state ?? current?.state ?? 'COLLECTING', adv.slots);
    if (current === null) {
      const task = {
        id: taskId,
        session_id: sessionId,
        type: type.name,
        state: state ?? 'COLLECTING',
        slots: adv.slots,
        status_line: line,
        data,
      };
      return { kind: 'create', task };
    }
    const patch: TaskPatch = {
      slots: adv.slots,
      status_line: line,
      data,
      ...adopt,
      ...(state === null ? {} : { state, cause }),
    };
    return { kind: 'update', id: current.id, expected_version: current.version, patch };
  };

  let last: Write | null = null;
  let pending: PendingTransition | null = null;
  for (const [i, transition] of adv.transitions.entries()) {
    if (transition.to === 'COLLECTING' && current?.state === 'FAILED') {
      // A retry after FAILED is a new round: its tool calls get new idempotency keys.
      data = { ...data, round: (typeof data.round === 'number' ? data.round : 0) + 1 };
    }
    const write = writeFor(transition.to, transition.cause);
    const lastOne = i === adv.transitions.length - 1;
    if (!executes && lastOne) {
      last = write;
      break;
    }
    // The move to EXECUTING goes with the first tool call's begin, unless the run being replayed wrote it on
    // its own (its journal has a commit here).
    if (lastOne && transition.to === 'EXECUTING' && write.kind === 'update' && !rt.journal.nextIs('commit')) {
      pending = { id: write.id, expected_version: write.expected_version, patch: write.patch };
      current = current === null ? null : applyPatch(current, write.patch);
      break;
    }
    const batch =
      write.kind === 'create'
        ? { create_tasks: [write.task] }
        : { update_tasks: [{ id: write.id, expected_version: write.expected_version, patch: write.patch }] };
    const { result } = await rt.commit(transition.to.toLowerCase(), batch, taskId);
    current = result.tasks.find((task) => task.id === taskId) ?? current;
  }
  if (adv.transitions.length === 0 && current !== null && current.state !== 'EXECUTING') {
    const write = writeFor(null, '');
    const line = write.kind === 'update' ? write.patch.status_line : undefined;
    const dataChanged = JSON.stringify(data) !== JSON.stringify(current.data);
    if (adv.changed.length > 0 || 'session_id' in adopt || current.status_line !== line || dataChanged)
      last = write;
  }
  const silent = executes || adv.state === 'EXECUTING';
  return {
    reaction: adv.reaction,
    state: adv.state,
    task: current,
    write: last,
    transition: pending,
    text: silent
      ? null
      : proposed.question !== null && adv.errors.length === 0
        ? proposed.question
        : reactionText(type, adv, input.base.language),
  };
}

/** The task as `patch` will leave it, version and times unchanged (the write is still to come). */
function applyPatch(task: Task, patch: TaskPatch): Task {
  return {
    ...task,
    ...(patch.state === undefined ? {} : { state: patch.state }),
    ...(patch.slots === undefined ? {} : { slots: patch.slots }),
    ...(patch.status_line === undefined ? {} : { status_line: patch.status_line }),
    ...(patch.data === undefined ? {} : { data: patch.data }),
    ...(patch.session_id === undefined ? {} : { session_id: patch.session_id }),
  };
}
