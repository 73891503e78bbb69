/**
 * The task state machine of SPEC 1, and the next step decided by plain code from state and slots:
 * ask the first missing slot, confirm when none is missing, execute after confirmation, report when done.
 */
import { AgentStateError } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';
import { canTransition, FINAL_TASK_STATES, type TaskState } from '../core/model.js';
import type { Extraction } from '../models/types.js';
import {
  type MergeResult,
  mergeSlots,
  missingSlots,
  type SlotContext,
  type SlotError,
  type TaskType,
} from './task-type.js';

/** Refuses a transition TASK_TRANSITIONS does not allow, naming both states. */
export function assertTransition(from: TaskState, to: TaskState): void {
  if (!canTransition(from, to)) {
    throw new AgentStateError('illegal_transition', `a task cannot go from ${from} to ${to}`, {
      details: { from, to },
    });
  }
}

export type NextStep =
  | { readonly kind: 'ask'; readonly slot: string }
  | { readonly kind: 'confirm' }
  | { readonly kind: 'execute' }
  | { readonly kind: 'report' };

export function nextStep(type: TaskType, state: TaskState, slots: JsonObject): NextStep {
  switch (state) {
    case 'INIT':
    case 'COLLECTING': {
      const missing = missingSlots(type, slots)[0];
      return missing === undefined ? { kind: 'confirm' } : { kind: 'ask', slot: missing };
    }
    case 'CONFIRMING':
      return { kind: 'confirm' };
    case 'EXECUTING':
      return { kind: 'execute' };
    default:
      return { kind: 'report' };
  }
}

/** What the turn says about the task after advancing it. */
export type Reaction =
  | { readonly kind: 'ask'; readonly slot: string }
  | { readonly kind: 'confirm' }
  | { readonly kind: 'execute' }
  | { readonly kind: 'declined' }
  | { readonly kind: 'cancelled' }
  | { readonly kind: 'status' };

export interface Transition {
  readonly to: TaskState;
  readonly cause: string;
}

export interface Advance {
  readonly state: TaskState;
  readonly slots: JsonObject;
  readonly changed: readonly string[];
  readonly errors: readonly SlotError[];
  /** In order; each is allowed from the one before. */
  readonly transitions: readonly Transition[];
  readonly reaction: Reaction;
}

export interface AdvanceInput {
  readonly state: TaskState;
  readonly slots: JsonObject;
  readonly found: JsonObject;
  readonly answer: Extraction['answer'];
  readonly cancel: boolean;
}

/** Advances a task by one user input. Pure: the same input gives the same result. */
export function advance(type: TaskType, input: AdvanceInput, context: SlotContext): Advance {
  let state = input.state;
  const transitions: Transition[] = [];
  const go = (to: TaskState, cause: string) => {
    assertTransition(state, to);
    transitions.push({ to, cause });
    state = to;
  };
  const unchanged: MergeResult = { slots: input.slots, changed: [], errors: [] };
  const done = (merge: MergeResult, reaction: Reaction): Advance => ({
    state,
    slots: merge.slots,
    changed: merge.changed,
    errors: merge.errors,
    transitions,
    reaction,
  });

  if (FINAL_TASK_STATES.includes(state)) return done(unchanged, { kind: 'status' });
  if (input.cancel) {
    if (!canTransition(state, 'CANCELLED')) return done(unchanged, { kind: 'status' });
    go('CANCELLED', 'cancelled by the user');
    return done(unchanged, { kind: 'cancelled' });
  }
  if (state === 'EXECUTING') return done(unchanged, { kind: 'status' });

  const merge = mergeSlots(type, input.slots, input.found, context);
  if (state === 'FAILED') {
    if (merge.changed.length === 0 && input.answer !== 'yes') return done(merge, { kind: 'status' });
    go('COLLECTING', merge.changed.length > 0 ? `retry with ${merge.changed.join(', ')} changed` : 'retry');
  }
  if (state === 'INIT') go('COLLECTING', 'started');
  if (state === 'CONFIRMING') {
    if (merge.changed.length > 0) go('COLLECTING', `changed ${merge.changed.join(', ')}`);
    else if (input.answer === 'yes') {
      go('EXECUTING', 'confirmed by the user');
      return done(merge, { kind: 'execute' });
    } else if (input.answer === 'no') return done(merge, { kind: 'declined' });
    else return done(merge, { kind: 'confirm' });
  }
  const missing = missingSlots(type, merge.slots)[0];
  if (missing !== undefined) return done(merge, { kind: 'ask', slot: missing });
  go('CONFIRMING', 'all required slots filled');
  if (!type.confirm) {
    go('EXECUTING', 'no confirmation needed');
    return done(merge, { kind: 'execute' });
  }
  return done(merge, { kind: 'confirm' });
}
