/**
 * The `rules` model: deterministic, offline, the default. Extraction by patterns (English and Chinese),
 * routing by recency, replies exactly as drafted.
 */
import type { Model, RouteDecision, RouteRequest } from '../types.js';
import { extractByRules } from './extract.js';

export { CITIES, cityRoles, findCities } from './cities.js';
export { extractDate, isValidTimezone, localToday, todayIn } from './dates.js';
export { detectIntent, extractByRules } from './extract.js';
export { detectAnswer, detectCancel, findEnum, findPersonName, looksChinese } from './words.js';

/** The rules model's routing for what the runtime's own rules left open: a new intent, else the latest task. */
function routeByRecency(request: RouteRequest): RouteDecision {
  const intent = request.extraction.intent;
  if (intent !== null)
    return { task_id: null, new_task_type: intent, reason: `the input asks for ${intent}` };
  const latest = [...request.tasks].sort((a, b) => b.updated_at.localeCompare(a.updated_at))[0];
  if (latest !== undefined) {
    return { task_id: latest.id, new_task_type: null, reason: 'the most recently active task' };
  }
  return { task_id: null, new_task_type: null, reason: 'no open task and no intent' };
}

export function createRulesModel(): Model {
  return {
    name: 'rules',
    extract: async (request) => extractByRules(request),
    route: async (request) => routeByRecency(request),
    reply: async (request) => {
      request.onDelta?.(request.draft);
      return request.draft;
    },
  };
}
