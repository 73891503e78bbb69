/** The rules model's extraction: every slot hint of every candidate task type, applied to one input. */
import type { JsonObject } from '../../core/json.js';
import type { Extraction, ExtractRequest, SlotInfo, TaskTypeInfo } from '../types.js';
import { cityRoles } from './cities.js';
import { extractDate } from './dates.js';
import {
  detectAnother,
  detectAnswer,
  detectCancel,
  findEnum,
  findIdentifier,
  findPersonName,
  findVersion,
} from './words.js';

function keywordHit(input: string, keyword: string): boolean {
  const lower = input.toLowerCase();
  if (/[\u4e00-\u9fff]/u.test(keyword)) return lower.includes(keyword);
  return new RegExp(`\\b${keyword.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`, 'i').test(lower);
}

/** The task type with the most keyword hits, or null. Ties go to the type listed first. */
export function detectIntent(input: string, taskTypes: readonly TaskTypeInfo[]): string | null {
  let best: { name: string; hits: number } | null = null;
  for (const type of taskTypes) {
    const hits = type.keywords.filter((keyword) => keywordHit(input, keyword)).length;
    if (hits > 0 && (best === null || hits > best.hits)) best = { name: type.name, hits };
  }
  return best?.name ?? null;
}

function slotValue(
  slot: SlotInfo,
  request: ExtractRequest,
  type: TaskTypeInfo,
  cities: (fallback: 'origin' | 'destination' | null) => { origin?: string; destination?: string },
): string | null {
  const expecting = request.expecting?.type === type.name && request.expecting.slot === slot.name;
  const hint = slot.hint;
  switch (hint.kind) {
    case 'city': {
      const expectedSlot = type.slots.find((s) => s.name === request.expecting?.slot);
      const fallback =
        request.expecting?.type === type.name && expectedSlot?.hint.kind === 'city'
          ? expectedSlot.hint.role
          : null;
      return cities(fallback)[hint.role] ?? null;
    }
    case 'date':
      return extractDate(request.input, Date.parse(request.now), request.timezone);
    case 'enum':
      return findEnum(request.input, hint.values);
    case 'person_name':
      return findPersonName(request.input, expecting);
    case 'identifier':
      return findIdentifier(request.input, expecting ? [...hint.after, ''] : hint.after);
    case 'version':
      return findVersion(request.input);
  }
}

export function extractByRules(request: ExtractRequest): Extraction {
  const cache = new Map<string, { origin?: string; destination?: string }>();
  const cities = (fallback: 'origin' | 'destination' | null) => {
    const key = String(fallback);
    let found = cache.get(key);
    if (found === undefined) {
      found = cityRoles(request.input, fallback);
      cache.set(key, found);
    }
    return found;
  };
  const slots: Record<string, JsonObject> = {};
  for (const type of request.taskTypes) {
    const values: JsonObject = {};
    for (const slot of type.slots) {
      const value = slotValue(slot, request, type, cities);
      if (value !== null) values[slot.name] = value;
    }
    slots[type.name] = values;
  }
  const cancel = detectCancel(request.input);
  return {
    intent: detectIntent(request.input, request.taskTypes),
    slots,
    answer: cancel ? null : detectAnswer(request.input),
    cancel,
    another: detectAnother(request.input),
  };
}
