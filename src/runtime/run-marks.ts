/**
 * Marks of runs a crash would leave interrupted (issue 32, "Recovery without a client"). A run about to
 * begin its first action (a tool call with an effect outside) is marked in a scope of agentstate's own,
 * so a server's recovery (src/server/recovery) finds the interrupted runs of every tenant with one read of
 * that scope; the mark is removed once the run completes. A turn with no tool call writes no mark and pays
 * nothing. Off unless a runtime is given `recovery` (RuntimeOptions).
 */
import { createHash } from 'node:crypto';
import { cryptoRandom } from '../core/clock.js';
import { invalidRequest } from '../core/errors.js';
import type { NewMemory, OtherMemory, Scope, StateStore } from '../store/types.js';

/** The scope that holds agentstate's own records (run marks, instances): never a tenant's. */
export const RECOVERY_SCOPE: Scope = { tenant_id: 'agentstate.system', user_id: 'recovery' };
export const RUN_MARKS_NAMESPACE = 'agentstate.runs';
/** A mark nobody removed (its run failed for good, its agent is gone) goes away after a week. */
export const RUN_MARK_TTL_SECONDS = 7 * 86_400;

/** Who runs the runtime: the server instance and this start of it. */
export interface RunRecoveryOptions {
  /** Stable across restarts (`serve --instance-id`). */
  readonly instanceId: string;
  /** Different at every start of the instance. */
  readonly incarnation: string;
}

/** A run mark's value. */
export interface RunMark {
  readonly tenant_id: string;
  readonly user_id: string;
  readonly session_id: string;
  readonly run_id: string;
  readonly agent: string;
  /** The owner of the session's lease when the mark was written. */
  readonly owner: string;
  readonly instance_id: string;
  readonly incarnation: string;
  readonly at: string;
}

const ID = /^[A-Za-z0-9._:@-]{1,128}$/;

/** An instance id or incarnation: 1-128 letters, digits and `. _ : @ -`; otherwise `invalid_request`. */
export function checkInstanceId(id: string, what = 'instance id'): string {
  if (typeof id !== 'string' || !ID.test(id)) {
    throw invalidRequest(
      `${what} must be 1-128 letters, digits or . _ : @ -, got ${JSON.stringify(id) ?? String(id)}`,
    );
  }
  return id;
}

/** A lease owner that names the instance and its start, unique per run. */
export function instanceLeaseOwner(recovery: RunRecoveryOptions): string {
  return `${recovery.instanceId}/${recovery.incarnation}/${Buffer.from(cryptoRandom(6)).toString('hex')}`;
}

/** The mark's key: one per run, whatever the tenant's and user's ids look like. */
export function runMarkKey(scope: Scope, runId: string): string {
  const owner = createHash('sha256').update(`${scope.tenant_id}\n${scope.user_id}`).digest('hex');
  return `${runId}:${owner.slice(0, 24)}`;
}

export function isRunMark(value: unknown): value is RunMark {
  if (typeof value !== 'object' || value === null) return false;
  const mark = value as Record<string, unknown>;
  return ['tenant_id', 'user_id', 'session_id', 'run_id', 'owner', 'instance_id', 'incarnation'].every(
    (field) => typeof mark[field] === 'string',
  );
}

/** The mark's item in RECOVERY_SCOPE, as `putMemory` or a turn's `other_memory` writes it. */
export function runMarkItem(scope: Scope, mark: Omit<RunMark, 'at'>): NewMemory {
  return {
    namespace: RUN_MARKS_NAMESPACE,
    key: runMarkKey(scope, mark.run_id),
    value: { ...mark, at: new Date().toISOString() },
    ttl_seconds: RUN_MARK_TTL_SECONDS,
  };
}

export async function deleteRunMark(store: StateStore, scope: Scope, runId: string): Promise<void> {
  await store.deleteMemory(RECOVERY_SCOPE, RUN_MARKS_NAMESPACE, runMarkKey(scope, runId));
}

/**
 * What a run's commits carry for its recovery mark (RunContext.marks): `part` is asked for each commit
 * with a batch that the run writes, `written` told of the part once that commit landed.
 */
export interface RunMarkWrites {
  part(commit: { readonly beginsAction: boolean; readonly ends: boolean }): OtherMemory | null;
  written(part: OtherMemory): void;
}

/**
 * The run's mark, written by the attempt's first commit that begins an action (from there on a crash
 * leaves a tool call to recover) and removed by the commit that ends the run, each in that commit
 * (`other_memory`, atomic with it where the store can: core/commit-turn.ts). A commit that ends the run
 * needs no mark. A resumed run was marked by an earlier attempt. `completed` removes a mark no commit of
 * this attempt removed (the run's last commit was replayed); one that could not be removed is found by the
 * recovery, which sees the run finished and removes it.
 */
export function markRunForRecovery(options: {
  readonly store: StateStore;
  readonly scope: Scope;
  readonly recovery: RunRecoveryOptions;
  readonly header: { readonly run_id: string; readonly session_id: string; readonly agent: string };
  readonly owner: string;
  readonly resumed: boolean;
}): RunMarkWrites & { completed(): Promise<void> } {
  const { store, scope, header } = options;
  let state: 'none' | 'marked' | 'removed' = options.resumed ? 'marked' : 'none';
  const key = { namespace: RUN_MARKS_NAMESPACE, key: runMarkKey(scope, header.run_id) };
  return {
    part({ beginsAction, ends }) {
      if (ends) return state === 'marked' ? { scope: RECOVERY_SCOPE, delete: [key] } : null;
      if (!beginsAction || state !== 'none') return null;
      const mark = runMarkItem(scope, {
        tenant_id: scope.tenant_id,
        user_id: scope.user_id,
        session_id: header.session_id,
        run_id: header.run_id,
        agent: header.agent,
        owner: options.owner,
        instance_id: options.recovery.instanceId,
        incarnation: options.recovery.incarnation,
      });
      return { scope: RECOVERY_SCOPE, put: [mark] };
    },
    written(part) {
      if ((part.put?.length ?? 0) > 0) state = 'marked';
      if ((part.delete?.length ?? 0) > 0) state = 'removed';
    },
    async completed() {
      if (state !== 'marked') return;
      await deleteRunMark(store, scope, header.run_id).catch(() => undefined);
    },
  };
}
