/**
 * A demo service's effect log: one JSON line for every call it receives and one for every side effect it
 * performs, whatever the idempotency key, fsync'd before the call returns. A harness counts exactly-once
 * from this file, not from the service's idempotency index: two effects for one logical step (the same
 * booking, the same deploy step of one release) are a duplicate even under two different keys, and a call
 * for a step whose effect was already performed is a redundant call even when the service deduplicates it.
 */
import { appendJsonLine, readJsonLines } from './ledger.js';

export interface EffectCall {
  readonly kind: 'call';
  readonly tool: string;
  readonly key: string;
  /** The logical step the call asks for, independent of its key (a service's own name for the work). */
  readonly step: string;
}

export interface EffectDone {
  readonly kind: 'effect';
  readonly tool: string;
  readonly key: string;
  readonly step: string;
}

export type EffectLine = EffectCall | EffectDone;

function isEffectLine(value: unknown): value is EffectLine {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    (v.kind === 'call' || v.kind === 'effect') &&
    typeof v.tool === 'string' &&
    typeof v.key === 'string' &&
    typeof v.step === 'string'
  );
}

/** Appends one line and fsyncs it: once this returns, the line is on disk. */
export function appendEffectLine(path: string, line: EffectLine): void {
  appendJsonLine(path, line);
}

/** Every complete line, oldest first; null when the file does not exist (a missing log is not an empty one). */
export function readEffectLog(path: string): EffectLine[] | null {
  const lines = readJsonLines(path);
  return lines === null ? null : lines.filter(isEffectLine);
}

export interface StepTally {
  readonly tool: string;
  /** Side effects performed for the step (1 is right). */
  readonly effects: number;
  /** Calls received for the step after its first effect (0 is right). */
  readonly redundant_calls: number;
  /** The keys its effects were performed under, in order. */
  readonly keys: string[];
}

export interface EffectTally {
  readonly steps: Record<string, StepTally>;
  /** Effects beyond the first of each step, summed over the steps. */
  readonly duplicate_effects: number;
  readonly redundant_calls: number;
  readonly calls: number;
  readonly effects: number;
}

/** Counts a log per logical step. */
export function tallyEffects(lines: readonly EffectLine[]): EffectTally {
  const steps: Record<string, { tool: string; effects: number; redundant_calls: number; keys: string[] }> =
    {};
  let calls = 0;
  let effects = 0;
  for (const line of lines) {
    const step = steps[line.step] ?? { tool: line.tool, effects: 0, redundant_calls: 0, keys: [] };
    steps[line.step] = step;
    if (line.kind === 'call') {
      calls++;
      if (step.effects > 0) step.redundant_calls++;
    } else {
      effects++;
      step.effects++;
      step.keys.push(line.key);
    }
  }
  const all = Object.values(steps);
  return {
    steps,
    duplicate_effects: all.reduce((sum, s) => sum + Math.max(0, s.effects - 1), 0),
    redundant_calls: all.reduce((sum, s) => sum + s.redundant_calls, 0),
    calls,
    effects,
  };
}

/** The tally of the log at `path`; a missing log is an error, never an empty tally. */
export function tallyEffectLog(path: string): EffectTally {
  const lines = readEffectLog(path);
  if (lines === null) throw new Error(`no effect log at ${path}`);
  return tallyEffects(lines);
}

/** Effects per logical step of the log at `path` (1 each is exactly once); a missing log is an error. */
export function effectsPerStep(path: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const [step, tally] of Object.entries(tallyEffectLog(path).steps)) counts[step] = tally.effects;
  return counts;
}
