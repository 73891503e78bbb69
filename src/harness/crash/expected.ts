/**
 * The output a scenario must end with: the reference run's, with one known difference a kill makes. A kill
 * after the commit that began an action (its PENDING record landed) and before the call's side effect leaves
 * the action PENDING with nothing done downstream; the resumed run's lookup finds nothing and runs it again
 * with the same key, which counts one attempt more. Those kill points are the call's `before_effect` and the
 * `after` point of the write just before it in the reference run.
 */
import type { JsonValue } from '../../core/json.js';

interface OutputAction {
  tool: string | null;
  attempts: number;
}

interface Output {
  tasks: { actions: OutputAction[] }[];
}

/** The tool whose begun, not yet performed call a kill at `point` interrupts, or null. */
export function interruptedBeforeEffect(point: string, referencePoints: readonly string[]): string | null {
  const inside = /^tool:(.+):before_effect$/.exec(point);
  if (inside !== null) return inside[1] ?? null;
  if (!point.endsWith(':after')) return null;
  const next = referencePoints[referencePoints.indexOf(point) + 1];
  return next === undefined ? null : (/^tool:(.+):before_effect$/.exec(next)?.[1] ?? null);
}

export function expectedOutput(
  reference: JsonValue,
  killedAt: readonly string[],
  referencePoints: readonly string[],
): JsonValue {
  const expected = structuredClone(reference) as unknown as Output;
  for (const point of killedAt) {
    const tool = interruptedBeforeEffect(point, referencePoints);
    if (tool === null) continue;
    for (const task of expected.tasks) {
      for (const action of task.actions) if (action.tool === tool) action.attempts++;
    }
  }
  return expected as unknown as JsonValue;
}
