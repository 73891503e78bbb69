/**
 * Kill points. A child run passes named points (before and after every store write, and two points inside each tool call),
 * prints each one as a JSON line, and SIGKILLs itself when it reaches the one named in AGENTSTATE_CRASH_AT:
 * a real SIGKILL, chosen deterministically.
 *
 * Names:
 * `commit:<n>:<method>:before|after` (the n-th store write of this process, 1-based, and its method),
 * `tool:<name>:before_effect` / `tool:<name>:effect_done` (inside the call, before the downstream's side
 * effect, and after it was performed and recorded there, before the runtime hears of it).
 */
import type { DemoHooks } from '../../demo/deploy/workspace.js';

export const CRASH_ENV = 'AGENTSTATE_CRASH_AT';
/** Test aid: block the process synchronously for AGENTSTATE_HOLD_MS at this point (to hold a lease). */
export const HOLD_ENV = 'AGENTSTATE_HOLD_AT';
export const HOLD_MS_ENV = 'AGENTSTATE_HOLD_MS';

/** An action of the run as the store holds it: its key is what the downstream must have seen. */
export interface ActionKey {
  readonly tool: string | null;
  readonly key: string;
  readonly status: string;
}

export type ChildEvent =
  | { readonly event: 'point'; readonly point: string }
  | { readonly event: 'resumed'; readonly ms: number; readonly replayed: boolean }
  | { readonly event: 'done'; readonly output: unknown; readonly keys: ActionKey[] }
  | { readonly event: 'conflict'; readonly message: string }
  | { readonly event: 'error'; readonly message: string };

/** Writes one event line. Pipes to a parent are synchronous on POSIX, so a line is out before a kill. */
export function emit(event: ChildEvent): void {
  process.stdout.write(`${JSON.stringify(event)}\n`);
}

function blockFor(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

export class CrashPoints {
  constructor(
    private readonly target: string | null,
    private readonly hold: { readonly at: string; readonly ms: number } | null = null,
  ) {}

  static fromEnv(): CrashPoints {
    const target = process.env[CRASH_ENV];
    const holdAt = process.env[HOLD_ENV];
    const holdMs = Number(process.env[HOLD_MS_ENV] ?? '0');
    const hold = holdAt === undefined || holdAt === '' || !(holdMs > 0) ? null : { at: holdAt, ms: holdMs };
    return new CrashPoints(target === undefined || target === '' ? null : target, hold);
  }

  pass(point: string): void {
    emit({ event: 'point', point });
    if (point === this.target) process.kill(process.pid, 'SIGKILL');
    if (point === this.hold?.at) blockFor(this.hold.ms);
  }

  /** Hooks for the demo tools: a point before the side effect, and one after it. */
  toolHooks(): DemoHooks {
    return { at: (point, tool) => this.pass(`tool:${tool}:${point}`) };
  }
}

/** True for a point at a step boundary, false for one inside a tool call. */
export function isStepBoundary(point: string): boolean {
  return point.startsWith('commit:');
}
