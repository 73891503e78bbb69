/**
 * What a finished task teaches about its user, and what a new session should propose from it.
 *
 * `rememberTaskOutcome`: when a task is DONE, the slot values its type's rule names are written to the
 * user's `preferences` as `<task type>.<key>` (for `flight_booking`: the cabin class and the passenger
 * name). `proposedSlots`: for a new task of that type, the remembered values of slots not yet filled, each
 * with the question to ask ("business class again?"). The runtime calls both; neither calls a model.
 */
import type { JsonObject, JsonValue } from '../core/json.js';
import type { MemoryItem, Task } from '../core/model.js';
import type { Scope, StateStore } from '../store/types.js';
import { PREFERENCES } from './namespaces.js';
import { userMemory } from './user-memory.js';

export interface RememberedSlot {
  /** The preference key (stored as `<task type>.<key>`). */
  readonly key: string;
  /** The slot a proposal fills. */
  readonly slot: string;
  /** Other slot names read when `slot` is empty (task types name slots differently). */
  readonly aliases?: readonly string[];
  /** The question that proposes a remembered value. */
  readonly question: (value: JsonValue) => string;
}

export type OutcomeRules = Readonly<Record<string, readonly RememberedSlot[]>>;

const text = (value: JsonValue): string => (typeof value === 'string' ? value : JSON.stringify(value));

export const DEFAULT_OUTCOME_RULES: OutcomeRules = {
  flight_booking: [
    {
      key: 'cabin_class',
      slot: 'cabin_class',
      aliases: ['cabin', 'class', 'travel_class'],
      question: (v) => `${text(v)} class again?`,
    },
    {
      key: 'passenger_name',
      slot: 'passenger_name',
      aliases: ['passenger', 'traveller', 'traveler'],
      question: (v) => `Book for ${text(v)} again?`,
    },
  ],
};

export interface RememberOptions {
  readonly rules?: OutcomeRules;
  /** Time to live of the remembered preferences. Default: none. */
  readonly ttlSeconds?: number | null;
}

function slotValue(slots: JsonObject, rule: RememberedSlot): JsonValue | null {
  for (const name of [rule.slot, ...(rule.aliases ?? [])]) {
    const value = slots[name];
    if (value !== undefined && value !== null && value !== '') return value;
  }
  return null;
}

export function preferenceKey(taskType: string, key: string): string {
  return `${taskType}.${key}`;
}

/**
 * Writes what a DONE task's user chose to their preferences; returns the items written. A task that is not
 * DONE, or whose type has no rule, writes nothing. Values already remembered are not written again.
 */
export async function rememberTaskOutcome(
  store: StateStore,
  task: Task,
  options: RememberOptions = {},
): Promise<MemoryItem[]> {
  const rules = (options.rules ?? DEFAULT_OUTCOME_RULES)[task.type];
  if (task.state !== 'DONE' || rules === undefined) return [];
  const memory = userMemory(store, { tenant_id: task.tenant_id, user_id: task.user_id });
  const written: MemoryItem[] = [];
  for (const rule of rules) {
    const value = slotValue(task.slots, rule);
    if (value === null) continue;
    const key = preferenceKey(task.type, rule.key);
    const existing = await memory.get(PREFERENCES, key);
    if (existing !== null && JSON.stringify(existing.value) === JSON.stringify(value)) continue;
    const put = options.ttlSeconds === undefined ? {} : { ttlSeconds: options.ttlSeconds };
    written.push(await memory.put(PREFERENCES, key, value, put));
  }
  return written;
}

export interface SlotProposal {
  readonly slot: string;
  readonly value: JsonValue;
  /** The preference it comes from: `preferences/<key>`. */
  readonly key: string;
  readonly question: string;
}

export interface ProposeOptions {
  /** Slots already filled: they get no proposal. */
  readonly filled?: JsonObject;
  readonly rules?: OutcomeRules;
}

/** What a new task of `taskType` for this user should propose, from remembered preferences. */
export async function proposedSlots(
  store: StateStore,
  scope: Scope,
  taskType: string,
  options: ProposeOptions = {},
): Promise<SlotProposal[]> {
  const rules = (options.rules ?? DEFAULT_OUTCOME_RULES)[taskType];
  if (rules === undefined) return [];
  const memory = userMemory(store, scope);
  const filled = options.filled ?? {};
  const out: SlotProposal[] = [];
  for (const rule of rules) {
    if (slotValue(filled, rule) !== null) continue;
    const key = preferenceKey(taskType, rule.key);
    const item = await memory.get(PREFERENCES, key);
    if (item === null || item.value === null || item.value === '') continue;
    out.push({ slot: rule.slot, value: item.value, key, question: rule.question(item.value) });
  }
  return out;
}

/** The proposals as slot values (for a task's `data.proposed_slots`, never for its confirmed slots). */
export function proposalsAsSlots(proposals: readonly SlotProposal[]): JsonObject {
  return Object.fromEntries(proposals.map((p) => [p.slot, p.value]));
}
