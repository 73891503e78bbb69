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
import type { Scope, StateStore } from '../store/types.js';

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

export async function putRunMark(store: StateStore, scope: Scope, mark: Omit<RunMark, 'at'>): Promise<void> {
  await store.putMemory(RECOVERY_SCOPE, {
    namespace: RUN_MARKS_NAMESPACE,
    key: runMarkKey(scope, mark.run_id),
    value: { ...mark, at: new Date().toISOString() },
    ttl_seconds: RUN_MARK_TTL_SECONDS,
  });
}

export async function deleteRunMark(store: StateStore, scope: Scope, runId: string): Promise<void> {
  await store.deleteMemory(RECOVERY_SCOPE, RUN_MARKS_NAMESPACE, runMarkKey(scope, runId));
}

/** What a run needs to be marked: its context's hook and its identity. */
export interface MarkedRun {
  beforeFirstAction: (() => Promise<void>) | null;
}

/**
 * Marks the run before its first commit that begins an action (RunContext.beforeFirstAction); the returned
 * `completed` removes the mark once the run completed (a resumed run's too: an earlier attempt marked it).
 * A mark that could not be removed is found by the recovery, which sees the run finished and removes it.
 */
export function markRunForRecovery(
  rt: MarkedRun,
  options: {
    readonly store: StateStore;
    readonly scope: Scope;
    readonly recovery: RunRecoveryOptions;
    readonly header: { readonly run_id: string; readonly session_id: string; readonly agent: string };
    readonly owner: string;
    readonly resumed: boolean;
  },
): { completed(): Promise<void> } {
  const { store, scope, header } = options;
  let marked = options.resumed;
  rt.beforeFirstAction = async () => {
    await putRunMark(store, scope, {
      tenant_id: scope.tenant_id,
      user_id: scope.user_id,
      session_id: header.session_id,
      run_id: header.run_id,
      agent: header.agent,
      owner: options.owner,
      instance_id: options.recovery.instanceId,
      incarnation: options.recovery.incarnation,
    });
    marked = true;
  };
  return {
    async completed() {
      if (!marked) return;
      await deleteRunMark(store, scope, header.run_id).catch(() => undefined);
    },
  };
}
