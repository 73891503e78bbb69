/**
 * A session's messages as its reader sees them. A plain session's are its own line (seq as stored). A fork
 * or a rewound session reads `history`: segments of stored lines (its ancestors', or its own for a rewind),
 * then its own messages from `own_from` on; the seq it shows counts through them all, so the stored line
 * of a fork is never copied and never renumbered.
 */
import type { Message, Session, SessionHistory } from '../../core/model.js';
import type { Op } from './context.js';
import type { DriverReads } from './driver.js';

/** A run of the history: stored messages from..to of `line`, shown as seq base + 1 on. */
interface Piece {
  readonly line: string;
  readonly from: number;
  readonly to: number;
  readonly base: number;
}

export function prefixLength(history: SessionHistory): number {
  let n = 0;
  for (const s of history.segments) n += s.to_seq - s.from_seq + 1;
  return n;
}

/** The seq a reader sees for the session's own stored seq (identity for a plain session). */
export function shownSeq(session: Session, storedSeq: number): number {
  const h = session.history;
  return h === undefined ? storedSeq : prefixLength(h) + storedSeq - h.own_from + 1;
}

/** The session's last seq as its reader sees it. */
export async function shownCount(tx: DriverReads, session: Session): Promise<number> {
  const own = await tx.messageCount(session);
  const h = session.history;
  return h === undefined ? own : prefixLength(h) + Math.max(0, own - h.own_from + 1);
}

function pieces(session: Session, history: SessionHistory, ownCount: number): Piece[] {
  const out: Piece[] = [];
  let base = 0;
  for (const s of history.segments) {
    out.push({ line: s.line, from: s.from_seq, to: s.to_seq, base });
    base += s.to_seq - s.from_seq + 1;
  }
  if (ownCount >= history.own_from)
    out.push({ line: session.id, from: history.own_from, to: ownCount, base });
  return out;
}

/** The stored session a line is (the session itself, or an ancestor kept for its forks). */
async function lineSession(op: Op, session: Session, line: string): Promise<Session | null> {
  if (line === session.id) return session;
  return op.tx.getSession({ tenant_id: session.tenant_id, user_id: session.user_id }, line);
}

/** Messages with shown seq > after, ascending, at most `limit`. */
export async function readMessages(
  op: Op,
  session: Session,
  after: number,
  limit: number,
): Promise<Message[]> {
  const history = session.history;
  if (history === undefined) return op.tx.listMessages(session, after, limit);
  const out: Message[] = [];
  for (const piece of pieces(session, history, await op.tx.messageCount(session))) {
    const length = piece.to - piece.from + 1;
    if (out.length >= limit) break;
    if (after >= piece.base + length) continue;
    const skip = Math.max(0, after - piece.base);
    const want = Math.min(limit - out.length, length - skip);
    const stored = await lineSession(op, session, piece.line);
    if (stored === null) continue;
    const rows = await op.tx.listMessages(stored, piece.from - 1 + skip, want);
    for (const m of rows) {
      if (m.seq > piece.to) break;
      out.push({ ...m, seq: piece.base + m.seq - piece.from + 1 });
    }
  }
  return out;
}

/** The last `n` messages, ascending. */
export async function readLastMessages(op: Op, session: Session, n: number): Promise<Message[]> {
  if (session.history === undefined) return op.tx.lastMessages(session, n);
  const count = await shownCount(op.tx, session);
  return readMessages(op, session, Math.max(0, count - n), n);
}
