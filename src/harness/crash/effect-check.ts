/**
 * Exactly-once, counted where the effects happen: a scenario's effect log (the deploy tools' own record of
 * every call and every effect, whatever the key) against the reference run's. A missing log fails; each
 * logical step of the reference must have exactly one effect, no other step any, no call may come after a
 * step's effect (a redundant call), and every effect's key must be the key the store recorded for that
 * step's action (a fresh key on a retry is caught even when it happens to cause no second effect).
 */
import { type EffectLine, readEffectLog, tallyEffects } from '../../demo/effects.js';
import type { ActionKey } from './points.js';

export interface EffectCheck {
  /** Effects beyond the first of a logical step (the deploy tools do not deduplicate: 0 is right). */
  readonly duplicate_side_effects: number;
  /** Calls for a step after its effect was performed (0 is right). */
  readonly redundant_calls: number;
  /** Steps of the reference run with no effect in this run. */
  readonly missing_effects: number;
  /** Effects of steps the reference run never had. */
  readonly unexpected_effects: number;
  /** Effects under a key no action of the run holds, and SUCCESS actions whose key has no effect. */
  readonly unmatched_keys: number;
  /** Effect-log lines read (calls and effects). */
  readonly lines: number;
  /** What is wrong, in words; empty when nothing is. */
  readonly problems: string[];
}

/**
 * The lines of one effect log, or of several (one per downstream, each step belonging to one of them); null
 * when any is missing.
 */
export function readEffectLogs(paths: string | readonly string[]): EffectLine[] | null {
  const lines: EffectLine[] = [];
  for (const path of typeof paths === 'string' ? [paths] : paths) {
    const log = readEffectLog(path);
    if (log === null) return null;
    lines.push(...log);
  }
  return lines;
}

function missingLogs(paths: string | readonly string[]): string[] {
  return (typeof paths === 'string' ? [paths] : paths).filter((path) => readEffectLog(path) === null);
}

/** The logical steps of the reference run (each must happen exactly once in every scenario). */
export function referenceSteps(effectsPath: string | readonly string[]): string[] {
  const log = readEffectLogs(effectsPath);
  if (log === null) throw new Error(`the reference run left no effect log at ${effectsPath}`);
  const tally = tallyEffects(log);
  const bad = Object.entries(tally.steps).filter(([, s]) => s.effects !== 1);
  if (bad.length > 0 || tally.redundant_calls > 0) {
    throw new Error(`the reference run's effect log is not exactly once: ${JSON.stringify(tally.steps)}`);
  }
  return Object.keys(tally.steps);
}

export function checkEffects(
  effectsPath: string | readonly string[],
  expectedSteps: readonly string[],
  keys: readonly ActionKey[] | null,
): EffectCheck {
  const log = readEffectLogs(effectsPath);
  if (log === null) {
    return {
      duplicate_side_effects: 0,
      redundant_calls: 0,
      missing_effects: expectedSteps.length,
      unexpected_effects: 0,
      unmatched_keys: 0,
      lines: 0,
      problems: [`no effect log at ${missingLogs(effectsPath).join(', ')}`],
    };
  }
  const tally = tallyEffects(log);
  const problems: string[] = [];
  const missing = expectedSteps.filter((step) => (tally.steps[step]?.effects ?? 0) === 0);
  const unexpected = Object.entries(tally.steps).filter(
    ([step, s]) => s.effects > 0 && !expectedSteps.includes(step),
  );
  for (const [step, s] of Object.entries(tally.steps)) {
    if (s.effects > 1) problems.push(`${step}: ${s.effects} effects (keys ${s.keys.join(', ')})`);
    if (s.redundant_calls > 0) problems.push(`${step}: ${s.redundant_calls} call(s) after its effect`);
  }
  for (const step of missing) problems.push(`${step}: no effect`);
  for (const [step] of unexpected) problems.push(`${step}: an effect the reference run never had`);
  let unmatched = 0;
  if (keys !== null) {
    const effectKeys = new Map<string, string>();
    for (const line of log) if (line.kind === 'effect') effectKeys.set(line.key, line.tool);
    const actionKeys = new Set(keys.map((k) => k.key));
    for (const [key, tool] of effectKeys) {
      if (!actionKeys.has(key)) {
        unmatched++;
        problems.push(`${tool}: an effect under key ${key}, which no action of the run holds`);
      }
    }
    for (const action of keys) {
      if (action.status === 'SUCCESS' && !effectKeys.has(action.key)) {
        unmatched++;
        problems.push(`${action.tool}: SUCCESS under key ${action.key}, which no effect was performed under`);
      }
    }
  }
  return {
    duplicate_side_effects: tally.duplicate_effects,
    redundant_calls: tally.redundant_calls,
    missing_effects: missing.length,
    unexpected_effects: unexpected.length,
    unmatched_keys: unmatched,
    lines: log.length,
    problems,
  };
}
