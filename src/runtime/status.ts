/** Human-readable status lines, kept current on every task: "Booking BJS -> SHA on 2026-12-09: waiting for cabin class". */
import type { JsonObject } from '../core/json.js';
import type { TaskState } from '../core/model.js';
import { missingSlots, type TaskType } from './task-type.js';

export type Progress =
  | { readonly kind: 'running'; readonly step: number; readonly tool: string }
  | { readonly kind: 'completed'; readonly step: number; readonly tool: string }
  | { readonly kind: 'blocked'; readonly reason: string }
  | { readonly kind: 'failed'; readonly reason: string }
  | { readonly kind: 'done'; readonly outcome: string };

export function statusLine(type: TaskType, state: TaskState, slots: JsonObject, progress?: Progress): string {
  const about = type.describe(slots);
  switch (state) {
    case 'INIT':
    case 'COLLECTING': {
      const missing = missingSlots(type, slots)[0];
      const label = missing === undefined ? null : (type.slots[missing]?.label ?? missing);
      return label === null ? `${about}: ready to confirm` : `${about}: waiting for ${label}`;
    }
    case 'CONFIRMING':
      return `${about}: waiting for confirmation`;
    case 'EXECUTING':
      if (progress?.kind === 'blocked') return `${about}: blocked: ${progress.reason}`;
      if (progress?.kind === 'running' || progress?.kind === 'completed') {
        const of = type.steps === null ? '' : ` of ${type.steps}`;
        return progress.kind === 'running'
          ? `${about}: running step ${progress.step}${of} (${progress.tool})`
          : `${about}: step ${progress.step}${of} done (${progress.tool})`;
      }
      return `${about}: executing`;
    case 'DONE':
      return progress?.kind === 'done' ? `${about}: done: ${progress.outcome}` : `${about}: done`;
    case 'FAILED':
      return progress?.kind === 'failed' ? `${about}: failed: ${progress.reason}` : `${about}: failed`;
    case 'CANCELLED':
      return `${about}: cancelled`;
  }
}
