/**
 * A session's head: what a turn reads before it runs (the session, its newest message, optionally the
 * scope's open tasks and the next run's latest checkpoint label), by the driver's fast path when it has one.
 */
import { isoAt } from '../../core/clock.js';
import { OPEN_TASK_STATES } from '../../core/model.js';
import { runIdFor } from '../../core/run-id.js';
import { SESSION_HEAD_FIELDS } from '../shared/known-fields.js';
import { checkNextRunOption } from '../shared/next-run.js';
import { MAX_PAGE_LIMIT, type ReadScope, type SessionHead, type SessionHeadOptions } from '../types.js';
import type { CoreEnv, Op } from './context.js';
import type { DriverFastPaths, HeadReads } from './driver.js';
import { readLastMessages } from './history.js';
import { liveSession } from './sessions.js';

export function checkHeadOptions(env: CoreEnv, options: SessionHeadOptions): HeadReads {
  const { v } = env;
  v.record(options, 'options', SESSION_HEAD_FIELDS);
  let openTasks: number | null = null;
  if (options.open_tasks !== undefined) {
    openTasks = v.positiveInt(options.open_tasks, 'options.open_tasks');
    if (openTasks > MAX_PAGE_LIMIT) v.fail(`options.open_tasks must be at most ${MAX_PAGE_LIMIT}`);
  }
  return { openTasks, nextRun: checkNextRunOption(options.next_run, `[${env.adapter}] `) };
}

/** The head by `fast` when the driver has it (a fork's falls back: its newest message may be an ancestor's). */
export async function readSessionHead(
  op: Op,
  fast: DriverFastPaths | undefined,
  scope: ReadScope,
  id: string,
  reads: HeadReads,
): Promise<SessionHead | null> {
  if (fast?.sessionHead !== undefined) {
    const head = await fast.sessionHead(scope, id, reads, isoAt(op.now));
    if (head === null || head.session.history === undefined) return head;
  }
  const session = await liveSession(op, scope, id);
  if (session === null) return null;
  const last = (await readLastMessages(op, session, 1))[0] ?? null;
  let head: SessionHead = { session, last_message: last };
  if (reads.openTasks !== null) {
    const open = await op.tx.listTasks(
      scope,
      { states: OPEN_TASK_STATES },
      { after: null, limit: reads.openTasks },
    );
    head = { ...head, open_tasks: open.map((row) => row.rec) };
  }
  if (reads.nextRun) {
    const runId = runIdFor(id, last?.seq ?? 0);
    const label = (await op.tx.latestCheckpoint(scope, runId))?.label ?? null;
    head = { ...head, next_run: { id: runId, checkpoint_label: label } };
  }
  return head;
}
