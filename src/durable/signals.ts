/** What a durable run throws to its own code: a failed action, and the pause that stops a run. */
import type { AgentStateError } from '../core/errors.js';

/** Thrown by `ctx.action` when the action FAILED: the downstream refused it, or retries ran out. */
export class ActionFailedError extends Error {
  readonly actionId: string;
  readonly code: string;

  constructor(actionId: string, code: string, message: string) {
    super(message);
    this.name = 'ActionFailedError';
    this.actionId = actionId;
    this.code = code;
  }
}

export type Pause =
  | { readonly kind: 'waiting'; readonly prompt: string | null; readonly invalid: AgentStateError | null }
  | { readonly kind: 'blocked'; readonly actionId: string; readonly note: string };

/**
 * Stops the run's code where it can go no further now (input to wait for, an action a person must
 * resolve). Once thrown, every later call of the context throws it again, so code that catches it cannot
 * go on past it.
 */
export class RunPaused extends Error {
  readonly pause: Pause;

  constructor(pause: Pause) {
    super(
      pause.kind === 'waiting' ? 'the run waits for input' : `the run waits for action ${pause.actionId}`,
    );
    this.name = 'RunPaused';
    this.pause = pause;
  }
}
