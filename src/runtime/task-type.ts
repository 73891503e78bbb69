/**
 * Task types, declared in code: slots (zod schemas, required or optional, with checks that give clear
 * messages), whether a confirmation is asked, and the tool calls EXECUTING makes, built from the slots.
 */
import type { z } from 'zod';
import { invalidRequest } from '../core/errors.js';
import type { JsonObject, JsonValue } from '../core/json.js';
import type { Language, SlotHint, TaskTypeInfo } from '../models/types.js';

export interface SlotContext {
  /** Today in the user's time zone, YYYY-MM-DD. */
  readonly today: string;
}

export interface SlotSpec {
  readonly schema: z.ZodType<JsonValue>;
  readonly required: boolean;
  /** Short, for status lines and questions: "cabin class". */
  readonly label: string;
  readonly description: string;
  readonly hint: SlotHint;
  /** The question that asks for this slot. */
  readonly question: Readonly<Record<Language, string>>;
  /** A further check with the turn's context; returns an error message or null. */
  readonly check?: (value: JsonValue, context: SlotContext) => string | null;
}

/** One tool call of EXECUTING. */
export interface PlannedCall {
  readonly tool: string;
  readonly params: JsonValue;
}

export interface TaskType {
  readonly name: string;
  readonly description: string;
  readonly keywords: readonly string[];
  /** In asking order. */
  readonly slots: Readonly<Record<string, SlotSpec>>;
  /** Ask "shall I go ahead?" before EXECUTING. When false, CONFIRMING passes straight on. */
  readonly confirm: boolean;
  /** How many tool calls EXECUTING makes (for "step 3 of 5"); null when it depends. */
  readonly steps: number | null;
  /** A check across slots (for example origin differs from destination); an error message or null. */
  readonly crossCheck?: (slots: JsonObject) => string | null;
  /** The next tool call from the slots and the results of the calls so far; null when all are done. */
  nextCall(slots: JsonObject, results: readonly JsonValue[]): PlannedCall | null;
  /** What the task is about, in a few words: "Booking BJS -> SHA on 2026-12-09". */
  describe(slots: JsonObject): string;
  /** The confirmation question. */
  confirmText(slots: JsonObject, language: Language): string;
  /** The report when every call succeeded. */
  doneText(slots: JsonObject, results: readonly JsonValue[], language: Language): string;
}

export function defineTaskType(type: TaskType): TaskType {
  if (!/^[a-z][a-z0-9_]*$/.test(type.name))
    throw invalidRequest(`task type name ${JSON.stringify(type.name)}`);
  return type;
}

export interface SlotError {
  readonly slot: string;
  readonly message: string;
}

export function missingSlots(type: TaskType, slots: JsonObject): string[] {
  return Object.entries(type.slots)
    .filter(([name, spec]) => spec.required && (slots[name] === undefined || slots[name] === null))
    .map(([name]) => name);
}

/** Validates one value: the zod schema first, then the check. An error message or the parsed value. */
export function validateSlot(
  type: TaskType,
  name: string,
  value: JsonValue,
  context: SlotContext,
): { ok: true; value: JsonValue } | { ok: false; message: string } {
  const spec = type.slots[name];
  if (spec === undefined) return { ok: false, message: `${type.name} has no slot ${name}` };
  const parsed = spec.schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { ok: false, message: `${spec.label}: ${issue?.message ?? 'invalid value'}` };
  }
  const problem = spec.check?.(parsed.data, context) ?? null;
  return problem === null
    ? { ok: true, value: parsed.data }
    : { ok: false, message: `${spec.label}: ${problem}` };
}

export interface MergeResult {
  readonly slots: JsonObject;
  /** Slots whose value changed (new or different). */
  readonly changed: readonly string[];
  readonly errors: readonly SlotError[];
}

/** Merges extracted values into the slots: valid values replace, invalid ones are reported and dropped. */
export function mergeSlots(
  type: TaskType,
  current: JsonObject,
  found: JsonObject,
  context: SlotContext,
): MergeResult {
  const slots: JsonObject = { ...current };
  const changed: string[] = [];
  const errors: SlotError[] = [];
  for (const [name, raw] of Object.entries(found)) {
    if (type.slots[name] === undefined) continue;
    const checked = validateSlot(type, name, raw, context);
    if (!checked.ok) {
      errors.push({ slot: name, message: checked.message });
      continue;
    }
    if (JSON.stringify(slots[name]) !== JSON.stringify(checked.value)) {
      slots[name] = checked.value;
      changed.push(name);
    }
  }
  const problem = changed.length > 0 ? (type.crossCheck?.(slots) ?? null) : null;
  if (problem !== null) {
    return {
      slots: { ...current },
      changed: [],
      errors: [...errors, { slot: changed.join(','), message: problem }],
    };
  }
  return { slots, changed, errors };
}

/** The plain-JSON description of a task type that models see. */
export function taskTypeInfo(type: TaskType): TaskTypeInfo {
  return {
    name: type.name,
    description: type.description,
    keywords: type.keywords,
    slots: Object.entries(type.slots).map(([name, spec]) => ({
      name,
      description: spec.description,
      required: spec.required,
      hint: spec.hint,
    })),
  };
}
