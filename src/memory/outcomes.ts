/**
 * What a finished task teaches about its user, and what a new session should propose from it.
 *
 * `rememberTaskOutcome`: when a task is DONE, the slot values its type's rule names are written to the
 * user's `preferences` as `<task type>.<key>` (for `flight_booking`: the cabin class and the passenger
 * name). `proposedSlots`: for a new task of that type, the remembered values of slots not yet filled, each
 * with the question to ask ("business class again?"). The runtime reads proposals with `proposedSlots` and
 * writes `outcomePreferences` with the commit that marks a task DONE; none of them calls a model.
 */
import type { JsonObject, JsonValue } from '../core/json.js';
import type { MemoryItem, Task } from '../core/model.js';
import type { Scope, StateStore } from '../store/types.js';
import { PREFERENCES } from './namespaces.js';
import { type UserMemory, userMemory } from './user-memory.js';

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

/** Keys the preferences of one task type can have in one page; more, and they are read one by one. */
const PREFERENCES_PAGE = 100;

/**
 * The user's live preferences for these rules of a task type, by key: one read of the type's keys (a
 * prefix), or one read per rule when the user has more keys under it than a page holds.
 */
async function preferencesOf(
  memory: UserMemory,
  taskType: string,
  rules: readonly { readonly key: string }[],
): Promise<Map<string, MemoryItem>> {
  const found = new Map<string, MemoryItem>();
  if (rules.length === 0) return found;
  const keys = rules.map((rule) => preferenceKey(taskType, rule.key));
  if (keys.length > 1) {
    const page = await memory.list(PREFERENCES, { prefix: `${taskType}.`, limit: PREFERENCES_PAGE });
    if (page.next_cursor === null) {
      for (const item of page.items) if (keys.includes(item.key)) found.set(item.key, item);
      return found;
    }
  }
  for (const key of keys) {
    const item = await memory.get(PREFERENCES, key);
    if (item !== null) found.set(key, item);
  }
  return found;
}

/**
 * The preferences (keys of `preferences`, values) a task's user chose, when the task is DONE and its type
 * has rules; none otherwise. Read nothing, write nothing: the runtime writes them with the commit that marks
 * the task DONE (`put_memory`), `rememberTaskOutcome` on its own.
 */
export function outcomePreferences(
  task: Pick<Task, 'type' | 'state' | 'slots'>,
  options: Pick<RememberOptions, 'rules'> = {},
): { key: string; value: JsonValue }[] {
  const rules = (options.rules ?? DEFAULT_OUTCOME_RULES)[task.type];
  if (task.state !== 'DONE' || rules === undefined) return [];
  const out: { key: string; value: JsonValue }[] = [];
  for (const rule of rules) {
    const value = slotValue(task.slots, rule);
    if (value !== null) out.push({ key: preferenceKey(task.type, rule.key), value });
  }
  return out;
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
  const remembered = await preferencesOf(memory, task.type, rules);
  const puts: Promise<MemoryItem>[] = [];
  for (const { key, value } of outcomePreferences(task, options)) {
    const existing = remembered.get(key) ?? null;
    if (existing !== null && JSON.stringify(existing.value) === JSON.stringify(value)) continue;
    const put = options.ttlSeconds === undefined ? {} : { ttlSeconds: options.ttlSeconds };
    puts.push(memory.put(PREFERENCES, key, value, put));
  }
  // Each preference is a key of its own: written at once (a store with a pool writes them side by side),
  // given back in the order of the rules.
  return Promise.all(puts);
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
  const open = rules.filter((rule) => slotValue(filled, rule) === null);
  const remembered = await preferencesOf(memory, taskType, open);
  const out: SlotProposal[] = [];
  for (const rule of open) {
    const key = preferenceKey(taskType, rule.key);
    const item = remembered.get(key) ?? null;
    if (item === null || item.value === null || item.value === '') continue;
    out.push({ slot: rule.slot, value: item.value, key, question: rule.question(item.value) });
  }
  return out;
}

/** The proposals as slot values (for a task's `data.proposed_slots`, never for its confirmed slots). */
export function proposalsAsSlots(proposals: readonly SlotProposal[]): JsonObject {
  return Object.fromEntries(proposals.map((p) => [p.slot, p.value]));
}
