/**
 * Long-term memory in a turn. A new task of a type with outcome rules (`flight_booking`) reads the user's
 * remembered preferences once, through the journal, and keeps them in `data.proposals`; when the next slot
 * to ask has a proposal, the turn asks "Business class again?" instead of the slot's question and keeps the
 * slot in `data.proposing`. The next input's "yes" fills the slot with the remembered value, "no" drops the
 * proposal (the normal question follows), another value fills the slot as usual. All of it is plain code:
 * no model decides task state.
 *
 * A task that reaches DONE has its user's choices written by the turn's final commit, the one that marks
 * it DONE (`put_memory` of the batch, `outcomeMemory`): both or neither, with no read and no round trip of
 * their own. A resumed run whose final commit was made replays it and writes nothing again.
 */
import type { JsonObject, JsonValue } from '../core/json.js';
import type { Task } from '../core/model.js';
import { PREFERENCES } from '../memory/namespaces.js';
import {
  DEFAULT_OUTCOME_RULES,
  outcomePreferences,
  proposedSlots,
  type SlotProposal,
} from '../memory/outcomes.js';
import type { Language } from '../models/types.js';
import type { NewMemory } from '../store/types.js';
import type { RunContext } from './run-context.js';

/** True when tasks of this type remember outcomes and get proposals. */
export function remembers(typeName: string): boolean {
  return DEFAULT_OUTCOME_RULES[typeName] !== undefined;
}

/** The user's remembered values for a new task of `typeName` (a journal step). */
export async function readProposals(rt: RunContext, typeName: string): Promise<SlotProposal[]> {
  const read = await rt.read(
    'memory.proposals',
    async () => (await proposedSlots(rt.store, rt.scope, typeName)) as unknown as JsonValue,
  );
  return read as unknown as SlotProposal[];
}

/**
 * What a task's user chose, as items of their `preferences` for the commit that marks the task DONE to
 * write (`put_memory`); none for a task that is not DONE or whose type remembers nothing.
 */
export function outcomeMemory(task: Task): NewMemory[] {
  if (!remembers(task.type)) return [];
  return outcomePreferences({ ...task, state: 'DONE' }).map(({ key, value }) => ({
    namespace: PREFERENCES,
    key,
    value,
  }));
}

function proposalsOf(data: JsonObject): SlotProposal[] {
  const list = data.proposals;
  return Array.isArray(list) ? (list as unknown as SlotProposal[]) : [];
}

function without(data: JsonObject, slot: string): JsonObject {
  const { proposing: _proposing, ...rest } = data;
  const left = proposalsOf(data).filter((p) => p.slot !== slot);
  return { ...rest, proposals: left as unknown as JsonValue };
}

/**
 * Applies the answer to a pending proposal: "yes" fills the slot with the remembered value, "no" drops
 * the proposal, a value for the slot replaces it. A yes/no is never taken as the slot's own value.
 */
export function answerProposal(
  data: JsonObject,
  found: JsonObject,
  answer: 'yes' | 'no' | null,
): { data: JsonObject; found: JsonObject } {
  const slot = data.proposing;
  if (typeof slot !== 'string') return { data, found };
  const proposal = proposalsOf(data).find((p) => p.slot === slot);
  if (proposal === undefined) return { data: without(data, slot), found };
  if (answer !== null) {
    const { [slot]: _said, ...rest } = found;
    return {
      data: without(data, slot),
      found: answer === 'yes' ? { ...rest, [slot]: proposal.value } : rest,
    };
  }
  if (found[slot] !== undefined) return { data: without(data, slot), found };
  return { data, found };
}

/** After advancing: when the slot to ask has a proposal, the question and the data that marks it. */
export function proposeFor(
  data: JsonObject,
  askSlot: string | null,
  language: Language,
): { data: JsonObject; question: string | null } {
  const { proposing: _proposing, ...rest } = data;
  const proposal = askSlot === null ? undefined : proposalsOf(data).find((p) => p.slot === askSlot);
  if (proposal === undefined || askSlot === null) {
    return { data: data.proposing === undefined ? data : rest, question: null };
  }
  return { data: { ...rest, proposing: askSlot }, question: questionText(proposal, language) };
}

function questionText(proposal: SlotProposal, language: Language): string {
  if (language === 'zh') {
    const value = typeof proposal.value === 'string' ? proposal.value : JSON.stringify(proposal.value);
    return `还和上次一样用 ${value} 吗？（是/否）`;
  }
  const q = proposal.question;
  return q.length === 0 ? q : `${q[0]?.toUpperCase()}${q.slice(1)}`;
}
