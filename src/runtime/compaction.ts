/**
 * After each committed turn the session's history is compacted when the messages after its last summary
 * exceed `DEFAULT_COMPACT_THRESHOLD_TOKENS` (or the runtime's `context.compactThresholdTokens`): the older
 * ones are summarized by the extractive rules summarizer, the newest half of the threshold is kept. Under
 * the threshold it costs one summary-head read and a backward read of at most that many tokens of
 * messages, and writes nothing; after a turn that only added messages to a history this process last
 * found under the threshold, not even those (see `HistoryGrowth` in context/compact.ts). It runs after the run's last commit, outside the journal: it changes no
 * record the run reads, so a resumed run replays identically; a resumed run may call it again, which
 * finds nothing over the threshold.
 */
import {
  type HistoryGrowth,
  historyOverThreshold,
  maybeCompact,
  underThresholdWithoutReading,
} from '../context/compact.js';
import { invalidRequest } from '../core/errors.js';
import type { Session } from '../core/model.js';
import type { Scope, StateStore } from '../store/types.js';

/** 4000 tokens: about 40 turns of a slot-filling conversation before the first summary. */
export const DEFAULT_COMPACT_THRESHOLD_TOKENS = 4_000;

export interface ContextOptions {
  /** Token budget of the conversation built for models that use one. Default 4000. */
  readonly maxTokens?: number;
  /** Compact after a turn when the unsummarized history exceeds this. Default 4000; false: never. */
  readonly compactThresholdTokens?: number | false;
  /** Told when compaction fails; the turn has committed and still succeeds. Default: ignored. */
  readonly onCompactionError?: (error: unknown) => void;
}

const positive = (n: unknown): boolean => typeof n === 'number' && Number.isInteger(n) && n > 0;

/** Refuses bad context options before a run starts (nothing is written). */
export function checkContextOptions(options: ContextOptions | undefined): void {
  if (options?.maxTokens !== undefined && !positive(options.maxTokens)) {
    throw invalidRequest(`context.maxTokens must be a positive integer, got ${String(options.maxTokens)}`);
  }
  const threshold = options?.compactThresholdTokens;
  if (threshold !== undefined && threshold !== false && !positive(threshold)) {
    throw invalidRequest(
      `context.compactThresholdTokens must be a positive integer or false, got ${String(threshold)}`,
    );
  }
}

export async function compactAfterTurn(
  store: StateStore,
  scope: Scope,
  sessionId: string,
  options: ContextOptions = {},
  /** The session as the turn left it, when known: saves reading it again. */
  session: Session | null = null,
  /** What the turn appended after which last seq, when known: may spare the check its reads. */
  growth: HistoryGrowth | null = null,
): Promise<boolean> {
  const threshold = options.compactThresholdTokens ?? DEFAULT_COMPACT_THRESHOLD_TOKENS;
  if (threshold === false) return false;
  try {
    const known = { ...(session === null ? {} : { session }), ...(growth === null ? {} : { growth }) };
    return (await maybeCompact({ store, scope, sessionId, thresholdTokens: threshold, ...known })) !== null;
  } catch (error) {
    options.onCompactionError?.(error);
    return false;
  }
}

/**
 * True when compaction after this turn is known to have nothing to do without reading anything (see
 * HistoryGrowth): compaction off, or the history's bound under the threshold. False: only compactAfterTurn
 * can tell.
 */
export function compactionSettled(
  store: StateStore,
  scope: Scope,
  sessionId: string,
  options: ContextOptions = {},
  session: Session | null,
  growth: HistoryGrowth | null,
): boolean {
  const threshold = options.compactThresholdTokens ?? DEFAULT_COMPACT_THRESHOLD_TOKENS;
  if (threshold === false) return true;
  if (session === null || growth === null) return false;
  return underThresholdWithoutReading({
    store,
    scope,
    sessionId,
    thresholdTokens: threshold,
    session,
    growth,
  });
}

/**
 * The check without the compaction: true when compactAfterTurn would write a summary. It reads and writes
 * nothing the lease guards, so it runs without the lease; a failure is told to onCompactionError (false).
 */
export async function compactionNeeded(
  store: StateStore,
  scope: Scope,
  sessionId: string,
  options: ContextOptions = {},
  session: Session | null = null,
  growth: HistoryGrowth | null = null,
): Promise<boolean> {
  const threshold = options.compactThresholdTokens ?? DEFAULT_COMPACT_THRESHOLD_TOKENS;
  if (threshold === false) return false;
  try {
    const known = { ...(session === null ? {} : { session }), ...(growth === null ? {} : { growth }) };
    return await historyOverThreshold({ store, scope, sessionId, thresholdTokens: threshold, ...known });
  } catch (error) {
    options.onCompactionError?.(error);
    return false;
  }
}
