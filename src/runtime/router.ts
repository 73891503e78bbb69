/**
 * Which open task an input belongs to. Rules first: "cancel" goes to the most recent task (of the type it
 * names, if any); yes/no goes to the task that is CONFIRMING; a new intent opens a new task unless an open
 * task of that type is still being filled and nothing conflicts; a slot value only one task is missing goes
 * to that task; the only open task gets the input; with no open task, values of one task type only start
 * one. What the rules leave open goes to the model.
 */
import type { JsonObject } from '../core/json.js';
import type { Extraction, OpenTaskInfo } from '../models/types.js';

export type RouteOutcome =
  | { readonly kind: 'task'; readonly task_id: string; readonly reason: string }
  | { readonly kind: 'new'; readonly type: string; readonly reason: string }
  | { readonly kind: 'model' }
  | { readonly kind: 'none'; readonly reason: string };

const FILLING = new Set(['INIT', 'COLLECTING', 'CONFIRMING']);

function byRecency(tasks: readonly OpenTaskInfo[]): OpenTaskInfo[] {
  return [...tasks].sort((a, b) => b.updated_at.localeCompare(a.updated_at) || b.id.localeCompare(a.id));
}

function conflicts(task: OpenTaskInfo, found: JsonObject): boolean {
  return Object.entries(found).some(
    ([name, value]) =>
      task.slots[name] !== undefined && JSON.stringify(task.slots[name]) !== JSON.stringify(value),
  );
}

export function routeByRules(extraction: Extraction, openTasks: readonly OpenTaskInfo[]): RouteOutcome {
  const tasks = byRecency(openTasks);
  const latest = tasks[0];
  if (extraction.cancel) {
    const ofType =
      extraction.intent === null ? undefined : tasks.find((task) => task.type === extraction.intent);
    const target = ofType ?? latest;
    if (target === undefined) return { kind: 'none', reason: 'cancel, but no task is open' };
    return { kind: 'task', task_id: target.id, reason: 'cancel goes to the most recent task' };
  }
  if (extraction.answer !== null) {
    const confirming = tasks.find((task) => task.state === 'CONFIRMING');
    if (confirming !== undefined) {
      return {
        kind: 'task',
        task_id: confirming.id,
        reason: 'an answer goes to the task that is confirming',
      };
    }
  }
  const intent = extraction.intent;
  if (intent !== null) {
    const found = extraction.slots[intent] ?? {};
    if (!extraction.another) {
      const same = tasks.find(
        (task) => task.type === intent && FILLING.has(task.state) && !conflicts(task, found),
      );
      if (same !== undefined) {
        return { kind: 'task', task_id: same.id, reason: `continues the open ${intent} task` };
      }
    }
    return { kind: 'new', type: intent, reason: `a new ${intent} request` };
  }
  const missingHit = tasks.filter((task) => {
    const found = extraction.slots[task.type] ?? {};
    return FILLING.has(task.state) && task.missing.some((slot) => found[slot] !== undefined);
  });
  if (missingHit.length === 1 && missingHit[0] !== undefined) {
    return { kind: 'task', task_id: missingHit[0].id, reason: 'the only task missing that slot' };
  }
  if (missingHit.length > 1) return { kind: 'model' };
  const changeHit = tasks.filter((task) => {
    const found = extraction.slots[task.type] ?? {};
    return (FILLING.has(task.state) || task.state === 'FAILED') && Object.keys(found).length > 0;
  });
  if (changeHit.length === 1 && changeHit[0] !== undefined) {
    return { kind: 'task', task_id: changeHit[0].id, reason: 'the only task with those slots' };
  }
  if (changeHit.length > 1) return { kind: 'model' };
  if (tasks.length === 1 && latest !== undefined) {
    return { kind: 'task', task_id: latest.id, reason: 'the only open task' };
  }
  if (tasks.length === 0) {
    // No keyword, but the values said belong to one task type only ("明天从广州飞成都"): start one.
    const implied = Object.entries(extraction.slots).filter(([, found]) => Object.keys(found).length > 0);
    if (implied.length === 1 && implied[0] !== undefined) {
      return { kind: 'new', type: implied[0][0], reason: `the values said belong to ${implied[0][0]}` };
    }
    return { kind: 'none', reason: 'no open task and no intent' };
  }
  return { kind: 'model' };
}
