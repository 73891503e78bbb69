/**
 * Forks and rewinds (contract/branches.ts). A fork is a new session whose `history` names ranges of the
 * stored lines it starts from (core/history.ts reads them); the lines' sessions are held (`retained_until`)
 * as long as the fork may read them, so either side can expire or be deleted alone. The session's tasks are
 * copied as they stood at the fork point; an effect in flight there (a PENDING or UNKNOWN action, an
 * EXECUTING task) refuses the fork, so a branch never repeats nor forgets one.
 */
import { isoAt } from '../../core/clock.js';
import { versionConflict } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import type { Checkpoint, Session, SessionHistory } from '../../core/model.js';
import { runIdFor } from '../../core/run-id.js';
import type { NewFork, Page, PageQuery, ReadScope, Rewind, RewindResult, Scope } from '../types.js';
import { copyTasks, moveTasks, tasksAt } from './branch-tasks.js';
import { type CoreEnv, conflict, notFound, type Op, type WriteOp } from './context.js';
import { readMessages, shownCount } from './history.js';
import { holdHistory } from './holds.js';
import { askPage, toPage } from './paging.js';
import { liveSession, replaceSession, requireSession } from './sessions.js';

/** The memory namespace that indexes a session's branches (key `<session>/<created at>/<branch>`). */
export const BRANCH_NAMESPACE = 'agentstate.branches';
const FORK_FIELDS = ['id', 'at_seq', 'checkpoint_id', 'ttl_seconds'];
const REWIND_FIELDS = ['at_seq', 'expected_version'];
const _PAGE = 500;

export interface CheckedFork {
  readonly id: string | null;
  readonly at_seq: number | null;
  readonly checkpoint_id: string | null;
  readonly ttl: number | null;
}

export function checkFork(env: CoreEnv, input: NewFork): CheckedFork {
  const { v } = env;
  v.record(input, 'fork', FORK_FIELDS);
  const at_seq = input.at_seq === undefined ? null : v.nonNegativeInt(input.at_seq, 'fork.at_seq');
  const checkpoint_id =
    input.checkpoint_id === undefined ? null : v.id(input.checkpoint_id, 'checkpoint', 'fork.checkpoint_id');
  if ((at_seq === null) === (checkpoint_id === null))
    v.fail('fork needs exactly one of at_seq and checkpoint_id');
  return {
    id: v.optionalId(input.id, 'session', 'fork.id'),
    at_seq,
    checkpoint_id,
    ttl: input.ttl_seconds === undefined ? null : v.positiveInt(input.ttl_seconds, 'fork.ttl_seconds'),
  };
}

export function checkRewind(env: CoreEnv, input: Rewind): { at_seq: number; expected: number | null } {
  const { v } = env;
  v.record(input, 'rewind', REWIND_FIELDS);
  return {
    at_seq: v.nonNegativeInt(input.at_seq, 'rewind.at_seq'),
    expected:
      input.expected_version === undefined
        ? null
        : v.positiveInt(input.expected_version, 'rewind.expected_version'),
  };
}

const ownerOf = (s: Session): Scope => ({ tenant_id: s.tenant_id, user_id: s.user_id });

/** The session's whole history as segments, its own messages included (up to its count). */
async function fullSegments(op: Op, session: Session): Promise<SessionHistory['segments']> {
  const own = await op.tx.messageCount(session);
  const h = session.history;
  const inherited = h === undefined ? [] : h.segments;
  const from = h === undefined ? 1 : h.own_from;
  return own >= from ? [...inherited, { line: session.id, from_seq: from, to_seq: own }] : [...inherited];
}

/** The first `n` shown messages' segments. */
function clip(segments: SessionHistory['segments'], n: number): SessionHistory['segments'] {
  const out: SessionHistory['segments'] = [];
  let left = n;
  for (const s of segments) {
    if (left <= 0) break;
    const length = Math.min(s.to_seq - s.from_seq + 1, left);
    out.push({ line: s.line, from_seq: s.from_seq, to_seq: s.from_seq + length - 1 });
    left -= length;
  }
  return out;
}

/** What a checkpoint tells of its fork point. */
export type CheckpointMark = Pick<Checkpoint, 'run_id' | 'label' | 'created_at'>;

/**
 * The messages a checkpoint of the session had seen: those written at or before it, and when the
 * checkpoint belongs to a turn's run that had not written its messages yet (any label but the run's last,
 * 'turn'), exactly the messages before the run (its id names that seq: core/run-id.ts), so a message
 * written in the same millisecond after it is not counted.
 */
export async function checkpointPoint(
  op: Op,
  session: Session,
  count: number,
  checkpoint: CheckpointMark,
): Promise<number> {
  const seq = await messagesBefore(op, session, count, checkpoint.created_at);
  if (checkpoint.label === 'turn') return seq;
  for (let k = seq; k >= Math.max(0, seq - 8); k--)
    if (runIdFor(session.id, k) === checkpoint.run_id) return k;
  return seq;
}

/** The number of messages written at or before `at` (ISO-8601): a binary search over the shown history. */
async function messagesBefore(op: Op, session: Session, count: number, at: string): Promise<number> {
  let low = 0;
  let high = count;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    const [m] = await readMessages(op, session, mid - 1, 1);
    if (m !== undefined && m.created_at <= at) low = mid;
    else high = mid - 1;
  }
  return low;
}

/** Where the fork point cuts time: the message after it was written then (null: nothing after it). */
async function cutAfter(op: Op, session: Session, seq: number, count: number): Promise<string | null> {
  if (seq >= count) return null;
  const [next] = await readMessages(op, session, seq, 1);
  return next?.created_at ?? null;
}

async function indexBranch(op: WriteOp, of: Session, branch: Session): Promise<void> {
  await op.tx.putMemory({
    ...ownerOf(of),
    namespace: BRANCH_NAMESPACE,
    key: `${of.id}/${branch.created_at}/${branch.id}`,
    value: { session_id: branch.id },
    created_at: branch.created_at,
    updated_at: branch.created_at,
    expires_at: null,
  });
}

interface NewBranch {
  readonly id: string | null;
  readonly ttl: number;
  readonly status: Session['status'];
  readonly forked_from: NonNullable<Session['forked_from']>;
  readonly segments: SessionHistory['segments'];
}

async function insertBranch(op: WriteOp, of: Session, input: NewBranch): Promise<Session> {
  const at = isoAt(op.now);
  const base: Session = {
    id: input.id ?? newId('session', op.env.random),
    tenant_id: of.tenant_id,
    user_id: of.user_id,
    agent: of.agent,
    status: input.status,
    context: of.context,
    version: 1,
    ttl_seconds: input.ttl,
    created_at: at,
    updated_at: at,
    last_activity_at: at,
    expires_at: isoAt(op.now + input.ttl * 1000),
    ended_at: null,
    forked_from: input.forked_from,
  };
  const history: SessionHistory = { segments: input.segments, own_from: 1, held_until: at };
  const held = await holdHistory(op, base, history);
  const branch: Session = { ...base, history: { ...history, held_until: held } };
  if (!(await op.tx.insertSession(branch))) throw conflict(op.env, 'session', branch.id);
  await indexBranch(op, of, branch);
  return branch;
}

/**
 * `resolvedSeq`: the point of a checkpoint fork already found by the caller (the tiered store, whose
 * checkpoints live apart from its sessions).
 */
export async function forkSession(
  op: WriteOp,
  scope: ReadScope,
  id: string,
  input: CheckedFork,
  resolvedSeq: number | null = null,
): Promise<Session> {
  const source = await requireSession(op, scope, id);
  const count = await shownCount(op.tx, source);
  let seq: number;
  if (resolvedSeq !== null) {
    seq = Math.min(resolvedSeq, count);
  } else if (input.checkpoint_id !== null) {
    const checkpoint = await op.tx.getCheckpoint(scope, input.checkpoint_id);
    if (checkpoint === null) throw notFound(op.env, 'checkpoint', input.checkpoint_id);
    if (checkpoint.session_id !== id)
      op.env.v.fail(`fork.checkpoint_id ${checkpoint.id} is not a checkpoint of session ${id}`);
    seq = await checkpointPoint(op, source, count, checkpoint);
  } else {
    seq = input.at_seq ?? 0;
    if (seq > count) op.env.v.fail(`fork.at_seq ${seq} is after the session's last message (seq ${count})`);
  }
  const cut = await cutAfter(op, source, seq, count);
  const tasks = await tasksAt(op, source, cut, seq);
  const fork = await insertBranch(op, source, {
    id: input.id,
    ttl: input.ttl ?? source.ttl_seconds,
    status: 'active',
    forked_from: { session_id: id, seq, checkpoint_id: input.checkpoint_id },
    segments: clip(await fullSegments(op, source), seq),
  });
  await copyTasks(op, fork, tasks);
  return fork;
}

/**
 * For another store's fork (the tiered store's): the session, its fork point at the checkpoint mark `at` or
 * else at message `seq` (at most its count), and when the next message was.
 */
export async function forkPointOf(
  op: Op,
  scope: ReadScope,
  id: string,
  seq: number | null,
  at: CheckpointMark | null,
): Promise<{ session: Session; seq: number; cut: string | null }> {
  const session = await requireSession(op, scope, id);
  const count = await shownCount(op.tx, session);
  const point = at === null ? Math.min(seq ?? 0, count) : await checkpointPoint(op, session, count, at);
  return { session, seq: point, cut: await cutAfter(op, session, point, count) };
}

/**
 * The session continues after `at_seq`: its history becomes the first `at_seq` messages, then what it
 * writes next. What came after moves to a new `paused` branch session with the session's tasks as they are;
 * the session keeps copies of them as they stood at `at_seq`.
 */
export async function rewindSession(
  op: WriteOp,
  scope: ReadScope,
  id: string,
  input: { at_seq: number; expected: number | null },
): Promise<RewindResult> {
  const current = await requireSession(op, scope, id);
  if (current.status === 'ended')
    op.env.v.fail(`session ${id} has ended and is not rewound; fork it instead`, { status: current.status });
  if (input.expected !== null && current.version !== input.expected)
    throw versionConflict(op.env.adapter, 'session', id, input.expected, current.version);
  const count = await shownCount(op.tx, current);
  if (input.at_seq >= count)
    op.env.v.fail(`rewind.at_seq ${input.at_seq} must be before the session's last message (seq ${count})`);
  const tasks = await tasksAt(op, current, await cutAfter(op, current, input.at_seq, count), input.at_seq);
  const segments = await fullSegments(op, current);
  const branch = await insertBranch(op, current, {
    id: null,
    ttl: current.ttl_seconds,
    status: 'paused',
    forked_from: { session_id: id, seq: count, checkpoint_id: null },
    segments,
  });
  // The session's tasks go with what came after; the session gets them as they stood at the point.
  await moveTasks(op, current, branch);
  const own = await op.tx.messageCount(current);
  const history: SessionHistory = {
    segments: clip(segments, input.at_seq),
    own_from: own + 1,
    held_until: current.history?.held_until ?? isoAt(op.now),
  };
  const at = isoAt(op.now);
  // The branch's hold rewrote the session's row (retained_until): the rewind writes over that one.
  const held = (await op.tx.getSession(ownerOf(current), id)) ?? current;
  const next: Session = {
    ...held,
    version: current.version + 1,
    updated_at: at,
    last_activity_at: at,
    expires_at: isoAt(op.now + current.ttl_seconds * 1000),
    history,
  };
  const session = await replaceSession(op, next, held);
  await copyTasks(op, session, tasks);
  return { session, branch };
}

/** A page of the index, then its live sessions (a branch gone since leaves its page a row short). */
export async function listBranches(
  op: Op,
  scope: ReadScope,
  id: string,
  query: PageQuery = {},
): Promise<Page<Session>> {
  const session = await liveSession(op, scope, id);
  if (session === null) throw notFound(op.env, 'session', id);
  op.env.v.record(query, 'query', ['limit', 'cursor']);
  const asked = await askPage(op.env, `branches:${id}`, scope, query);
  const rows = await op.tx.listMemory(
    ownerOf(session),
    BRANCH_NAMESPACE,
    { prefix: `${id}/`, liveAt: isoAt(op.now) },
    asked.request,
  );
  const page = await toPage(op.env, asked, rows);
  const out: Session[] = [];
  for (const item of page.items) {
    const value = item.value as { session_id?: unknown };
    if (typeof value.session_id !== 'string') continue;
    const branch = await liveSession(op, ownerOf(session), value.session_id);
    if (branch !== null) out.push(branch);
  }
  return { items: out, next_cursor: page.next_cursor };
}
