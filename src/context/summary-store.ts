/**
 * Compaction summaries, kept as data. The store contract has no summary table, so a summary is a long-term
 * memory item of the session's user in the reserved namespace `_summaries:<session_id>`:
 * - key `<to_seq zero-padded to 12 digits>`: every summary ever written, for audit and the inspector;
 * - key `head`: a copy of the newest one, the only one the builder reads (one point read, whatever the
 *   length of the history).
 * Summaries are rolling: each covers seq 1..to_seq (the previous summary's points folded with the newer
 * messages), so the newest one replaces every older message. Raw messages are never deleted.
 */
import { z } from 'zod';
import { AgentStateError } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';
import type { Session } from '../core/model.js';
import type { Scope, StateStore } from '../store/types.js';

export const SUMMARY_NAMESPACE_PREFIX = '_summaries:';
export const SUMMARY_HEAD_KEY = 'head';
const SEQ_DIGITS = 12;

export const SummaryRecordSchema = z.object({
  session_id: z.string(),
  from_seq: z.number().int().min(1),
  to_seq: z.number().int().min(1),
  points: z.array(z.string()),
  summarizer: z.string(),
  message_count: z.number().int().min(0),
  /** The id of message `to_seq` when written: a rewound session's older summaries are known by it. */
  to_message_id: z.string().optional(),
});
export type SummaryRecord = z.infer<typeof SummaryRecordSchema>;

export function summaryNamespace(sessionId: string): string {
  return `${SUMMARY_NAMESPACE_PREFIX}${sessionId}`;
}

/** The history key of a summary: its end seq, zero-padded so keys sort in seq order. */
export function summaryKey(toSeq: number): string {
  return String(toSeq).padStart(SEQ_DIGITS, '0');
}

function parse(value: unknown, where: string): SummaryRecord {
  const parsed = SummaryRecordSchema.safeParse(value);
  if (!parsed.success) {
    throw new AgentStateError(
      'internal',
      `summary ${where} is not a summary record: ${parsed.error.message}`,
    );
  }
  return parsed.data;
}

/** The newest summary of a session, or null when it was never compacted. */
export async function readSummaryHead(
  store: StateStore,
  scope: Scope,
  sessionId: string,
): Promise<SummaryRecord | null> {
  const item = await store.getMemory(scope, summaryNamespace(sessionId), SUMMARY_HEAD_KEY);
  return item === null ? null : parse(item.value, `${summaryNamespace(sessionId)}/${SUMMARY_HEAD_KEY}`);
}

/**
 * The newest summary that still describes the session's line: a forked or rewound session (one with
 * `history`) may have summaries of a line it no longer continues, told by the message at their `to_seq`.
 */
export async function readLineSummaryHead(
  store: StateStore,
  scope: Scope,
  session: Session,
): Promise<SummaryRecord | null> {
  const head = await readSummaryHead(store, scope, session.id);
  if (head === null || session.history === undefined) return head;
  const [at] = await store.listMessages(scope, session.id, { after_seq: head.to_seq - 1, limit: 1 });
  return at !== undefined && at.id === head.to_message_id ? head : null;
}

/** Stores a summary: its history entry first, then the head, so the head never names a missing entry. */
export async function writeSummary(store: StateStore, scope: Scope, record: SummaryRecord): Promise<void> {
  const value = parse(record, 'to write') as unknown as JsonObject;
  const namespace = summaryNamespace(record.session_id);
  await store.putMemory(scope, { namespace, key: summaryKey(record.to_seq), value });
  await store.putMemory(scope, { namespace, key: SUMMARY_HEAD_KEY, value });
}

/** Every summary of a session, oldest first (pages through the namespace; for inspection, not the hot path). */
export async function listSummaries(
  store: StateStore,
  scope: Scope,
  sessionId: string,
): Promise<SummaryRecord[]> {
  const namespace = summaryNamespace(sessionId);
  const out: SummaryRecord[] = [];
  let cursor: string | null = null;
  do {
    const page = await store.listMemory(scope, namespace, { limit: 500, cursor });
    for (const item of page.items) {
      if (item.key !== SUMMARY_HEAD_KEY) out.push(parse(item.value, `${namespace}/${item.key}`));
    }
    cursor = page.next_cursor;
  } while (cursor !== null);
  return out.sort((a, b) => a.to_seq - b.to_seq);
}
