/**
 * Compaction as data: when the messages after a session's last summary weigh more than a token threshold,
 * fold the older of them into a new rolling summary and store it (raw messages stay). The newest
 * `keepTokens` of messages stay out of the summary, so the builder still shows them verbatim.
 *
 * Cost: deciding reads at most `thresholdTokens` worth of messages backwards; compacting reads the range
 * being summarized once, forwards, in pages of 500.
 */

import { AgentStateError, invalidRequest } from '../core/errors.js';
import type { Message, Session } from '../core/model.js';
import { RecentMap } from '../core/recent-map.js';
import { cacheIdentity } from '../store/cache-identity.js';
import type { ReadScope, Scope, StateStore } from '../store/types.js';
import { storedMessageTokens } from './message-tokens.js';
import { storeMessageSource } from './source.js';
import { rulesSummarizer, type Summarizer } from './summarizer.js';
import { readLineSummaryHead, type SummaryRecord, writeSummary } from './summary-store.js';
import { loadedTokenizer, loadTokenizer, type Tokenizer, UTF8_BYTES_BOUND } from './tokenizer.js';
import { selectWindow } from './window.js';

export interface CompactOptions {
  readonly store: StateStore;
  readonly scope: ReadScope;
  readonly sessionId: string;
  /** The session when the caller has it already (it must be `sessionId` in `scope`): saves reading it. */
  readonly session?: Session;
  /** Compact when the messages after the last summary exceed this many tokens. */
  readonly thresholdTokens: number;
  /** Tokens of the newest messages left out of the summary. Default half the threshold. */
  readonly keepTokens?: number;
  /** Default: o200k_base. */
  readonly tokenizer?: Tokenizer;
  /** Default: the extractive `rules` summarizer. */
  readonly summarizer?: Summarizer;
  /** What the caller appended just now after which last seq: may spare the reads (see HistoryGrowth). */
  readonly growth?: HistoryGrowth;
}

/**
 * Messages a caller appended after the session's last seq `fromSeq`, as stored (with their seqs). When this
 * process last found the session's history under the threshold at exactly `fromSeq`, and the appended
 * messages follow it with no gap (nobody else appended meanwhile), the history's tokens are at most what
 * was found plus theirs: a summary written since, or messages removed, only lower them. Under the
 * threshold that bound decides without reading anything.
 */
export interface HistoryGrowth {
  readonly fromSeq: number;
  readonly appended: readonly Message[];
}

/** Per process: a session's history tokens above its summary (an upper bound) as of its last seq. */
interface KnownHistory {
  readonly seq: number;
  readonly tokens: number;
}

/** Sessions remembered per store; the least recently checked go first. */
const KNOWN_SESSIONS = 20_000;
const knownByStore = new WeakMap<object, RecentMap<string, KnownHistory>>();

function knownHistories(store: StateStore): RecentMap<string, KnownHistory> {
  const identity = cacheIdentity(store);
  let known = knownByStore.get(identity);
  if (known === undefined) {
    known = new RecentMap(KNOWN_SESSIONS);
    knownByStore.set(identity, known);
  }
  return known;
}

function remember(histories: RecentMap<string, KnownHistory>, key: string, known: KnownHistory | null): void {
  if (known === null) histories.delete(key);
  else histories.set(key, known);
}

/** The bound after `growth`, when it follows what is known with no gap; null otherwise. */
function grownBound(
  remembered: KnownHistory | undefined,
  growth: HistoryGrowth | undefined,
  cost: (m: Message) => number,
): KnownHistory | null {
  if (growth === undefined) return null;
  // A session whose last seq was 0 had no messages, hence no summary: nothing above it.
  const known = remembered ?? (growth.fromSeq === 0 ? { seq: 0, tokens: 0 } : undefined);
  if (known === undefined || known.seq !== growth.fromSeq) return null;
  let seq = growth.fromSeq;
  let tokens = known.tokens;
  for (const message of growth.appended) {
    if (message.seq !== seq + 1) return null;
    seq = message.seq;
    tokens += cost(message);
  }
  return { seq, tokens };
}

const READ_PAGE = 500;

/** The session the caller passed, when it is `sessionId` in `scope`. */
function givenSession(options: CompactOptions): Session | null {
  const known = options.session;
  const fits =
    known !== undefined &&
    known.id === options.sessionId &&
    known.tenant_id === options.scope.tenant_id &&
    (options.scope.user_id === undefined || known.user_id === options.scope.user_id);
  return fits ? known : null;
}

/** The session's creation time is in the key: a session deleted and made again with the same id starts over. */
function historyKeyOf(session: Session): string {
  return [session.tenant_id, session.user_id, session.id, session.created_at].join('\u0000');
}

/** True (and remembered) when the bound after `growth` puts the history under the threshold. */
function underByBound(
  histories: RecentMap<string, KnownHistory>,
  historyKey: string,
  growth: HistoryGrowth | undefined,
  cost: (m: Message) => number,
  thresholdTokens: number,
): boolean {
  const grown = grownBound(histories.get(historyKey), growth, cost);
  if (grown === null || grown.tokens > thresholdTokens) return false;
  remember(histories, historyKey, grown);
  return true;
}

/**
 * Decides without reading or writing anything: true when what this process knows of the session's history
 * (see HistoryGrowth) puts it under the threshold after `growth` (and remembers the new bound); false when
 * only `maybeCompact` can tell. Needs the session and the growth in `options`.
 */
export function underThresholdWithoutReading(options: CompactOptions): boolean {
  const session = givenSession(options);
  if (session === null || options.growth === undefined) return false;
  if (!Number.isInteger(options.thresholdTokens) || options.thresholdTokens < 1) return false;
  const tokenizer = options.tokenizer ?? loadedTokenizer() ?? UTF8_BYTES_BOUND;
  const cost = (m: Message) => storedMessageTokens(tokenizer, m);
  const histories = knownHistories(options.store);
  return underByBound(histories, historyKeyOf(session), options.growth, cost, options.thresholdTokens);
}

/** Compacts when over the threshold: returns the new summary, or null when nothing needed compacting. */
export async function maybeCompact(options: CompactOptions): Promise<SummaryRecord | null> {
  const outcome = await checkAndCompact(options, true);
  return outcome === 'over' ? null : outcome;
}

/**
 * The check alone: true when the history after the session's last summary is over the threshold (a
 * compaction would write), false when it is under (and remembered, as maybeCompact does). It reads what
 * maybeCompact reads to decide and writes nothing.
 */
export async function historyOverThreshold(options: CompactOptions): Promise<boolean> {
  return (await checkAndCompact(options, false)) === 'over';
}

/** `write` false: stops where a compaction would start, with 'over'. */
async function checkAndCompact(
  options: CompactOptions,
  write: boolean,
): Promise<SummaryRecord | 'over' | null> {
  const { store, scope, sessionId, thresholdTokens } = options;
  if (!Number.isInteger(thresholdTokens) || thresholdTokens < 1) {
    throw invalidRequest(
      `compaction: thresholdTokens must be a positive integer, got ${String(thresholdTokens)}`,
    );
  }
  const keepTokens = options.keepTokens ?? Math.floor(thresholdTokens / 2);
  if (!Number.isInteger(keepTokens) || keepTokens < 0 || keepTokens > thresholdTokens) {
    throw invalidRequest(
      `compaction: keepTokens must be an integer in 0..thresholdTokens, got ${String(keepTokens)}`,
    );
  }
  const session = givenSession(options) ?? (await store.getSession(scope, sessionId));
  if (session === null) throw new AgentStateError('not_found', `session ${sessionId} not found`);
  const userScope: Scope = { tenant_id: session.tenant_id, user_id: session.user_id };
  // Without a tokenizer of the caller's, the check first counts UTF-8 bytes, an upper bound of the tokens
  // (see UTF8_BYTES_BOUND): a history it finds under the threshold is under it, and the encoding (~0.2 s to
  // load) is loaded only for a history the bound puts over. Once loaded, it counts exactly from the start.
  const loaded = options.tokenizer ?? loadedTokenizer();
  const bounding = loaded === null;
  let tokenizer = loaded ?? UTF8_BYTES_BOUND;
  const summarizer = options.summarizer ?? rulesSummarizer();
  let cost = (m: Message) => storedMessageTokens(tokenizer, m);
  const historyKey = historyKeyOf(session);
  const histories = knownHistories(store);
  if (underByBound(histories, historyKey, options.growth, cost, thresholdTokens)) return null;

  const head = await readLineSummaryHead(store, userScope, session);
  const floor = head?.to_seq ?? 0;
  const source = storeMessageSource(store, scope, sessionId);

  let probe = await selectWindow(source, { budget: thresholdTokens, cost, floor });
  if (!probe.complete && bounding) {
    const exact = await loadTokenizer();
    tokenizer = exact;
    cost = (m: Message) => storedMessageTokens(exact, m);
    probe = await selectWindow(source, { budget: thresholdTokens, cost, floor });
  }
  if (probe.complete) {
    // Known as of the caller's last seq only: the window may end before it (a tool result left out).
    const last = options.growth?.appended.at(-1)?.seq ?? options.growth?.fromSeq;
    const newest = probe.messages.at(-1)?.seq ?? floor;
    remember(
      histories,
      historyKey,
      last === undefined || newest > last ? null : { seq: last, tokens: probe.tokens },
    );
    return null;
  }
  remember(histories, historyKey, null);
  if (!write) return 'over';
  const keep = await selectWindow(source, { budget: keepTokens, cost, floor });
  const first = keep.messages[0];
  const cutSeq = first !== undefined ? first.seq - 1 : (keep.cut_to ?? floor);
  if (cutSeq <= floor) return null;

  let points = head?.points ?? [];
  let after = floor;
  let afterId = head?.to_message_id;
  let count = 0;
  while (after < cutSeq) {
    const page = await store.listMessages(scope, sessionId, {
      after_seq: after,
      limit: Math.min(READ_PAGE, cutSeq - after),
    });
    if (page.length === 0) break;
    points = await summarizer.summarize({ previous: points, messages: page });
    after = page[page.length - 1]!.seq;
    afterId = page[page.length - 1]!.id;
    count += page.length;
  }
  const record: SummaryRecord = {
    session_id: sessionId,
    from_seq: head?.from_seq ?? 1,
    to_seq: after,
    points,
    summarizer: summarizer.name,
    message_count: (head?.message_count ?? 0) + count,
    ...(afterId === undefined ? {} : { to_message_id: afterId }),
  };
  if (after <= floor) return null;
  await writeSummary(store, userScope, record);
  return record;
}
