/**
 * The settings a run takes from its `RuntimeOptions`, checked before it starts: a bad one is an
 * `invalid_request` naming the option, and the run stores nothing.
 */
import { invalidRequest } from '../core/errors.js';
import { isValidTimezone } from '../models/rules/dates.js';
import { DEFAULT_CANCEL_CHECK_MS } from './cancel.js';
import { type ContextOptions, checkContextOptions } from './compaction.js';
import { DEFERRED_CHECKPOINT_MS } from './run-context.js';

export const DEFAULT_KEEP_RUN_CHECKPOINTS = 20;
/** The longest `checkpointDeferMs` and `cancelCheckMs`: an hour. */
const MAX_OPTION_MS = 3_600_000;

/** The options these settings come from (see `RuntimeOptions` for each). */
export interface RunSettingsOptions {
  readonly context?: ContextOptions;
  readonly keepCheckpoints?: number | false;
  readonly timezone?: string;
  readonly checkpointDeferMs?: number;
  readonly cancelCheckMs?: number;
}

export interface RunSettings {
  readonly keep: number | false;
  readonly timezone: string;
  readonly deferMs: number;
  readonly cancelCheckMs: number;
}

/** A time in ms: `value` checked, or `fallback` when not given. */
function wholeMs(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 0 || value > MAX_OPTION_MS)
    throw invalidRequest(`${name}: must be a whole number of ms from 0 to ${MAX_OPTION_MS}, got ${value}`);
  return value;
}

export function runSettingsOf(options: RunSettingsOptions): RunSettings {
  checkContextOptions(options.context);
  const keep = options.keepCheckpoints ?? DEFAULT_KEEP_RUN_CHECKPOINTS;
  if (keep !== false && (!Number.isInteger(keep) || keep < 1))
    throw invalidRequest(`keepCheckpoints: must be a positive whole number or false, got ${keep}`);
  const timezone = options.timezone ?? 'UTC';
  if (!isValidTimezone(timezone))
    throw invalidRequest(`timezone: ${JSON.stringify(timezone)} is not an IANA time zone`);
  return {
    keep,
    timezone,
    deferMs: wholeMs('checkpointDeferMs', options.checkpointDeferMs, DEFERRED_CHECKPOINT_MS),
    cancelCheckMs: wholeMs('cancelCheckMs', options.cancelCheckMs, DEFAULT_CANCEL_CHECK_MS),
  };
}
