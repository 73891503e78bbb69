/**
 * The output a scenario must end with: the reference run's, with one known difference a kill makes. A kill
 * inside a tool call before its side effect leaves the action PENDING with nothing done downstream; the
 * resumed run's lookup finds nothing and runs it again with the same key, which counts one attempt more.
 */
import type { JsonValue } from '../../core/json.js';

interface OutputAction {
  tool: string | null;
  attempts: number;
}

interface Output {
  tasks: { actions: OutputAction[] }[];
}

export function expectedOutput(reference: JsonValue, killedAt: readonly string[]): JsonValue {
  const expected = structuredClone(reference) as unknown as Output;
  for (const point of killedAt) {
    const match = /^tool:(.+):before_effect$/.exec(point);
    if (match === null) continue;
    for (const task of expected.tasks) {
      for (const action of task.actions) if (action.tool === match[1]) action.attempts++;
    }
  }
  return expected as unknown as JsonValue;
}
