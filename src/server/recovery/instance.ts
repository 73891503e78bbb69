/**
 * A server instance's identity (issue 32): an id stable across restarts (`serve --instance-id`, by default
 * the host and the data directory) and an incarnation, new at every start. The session leases of its runs
 * name both (run-marks.ts), so a restarted instance knows which leases its previous incarnation held and
 * frees them at once instead of waiting for them to expire.
 *
 * The store keeps one record per instance id (where it runs, its pid, its incarnation). At start, a record
 * of a process that is still alive on this host (a second server started with the same id by mistake)
 * means the id is in use: nothing is taken over early then, and its runs are recovered as any other
 * instance's, once their leases expire. An id given on two hosts at once cannot be told apart: give each
 * running server its own.
 */
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { cryptoRandom } from '../../core/clock.js';
import { checkInstanceId, RECOVERY_SCOPE, type RunRecoveryOptions } from '../../runtime/run-marks.js';
import type { StateStore } from '../../store/types.js';

export const INSTANCES_NAMESPACE = 'agentstate.instances';

/** An instance's record in the store. */
export interface InstanceRecord {
  readonly host: string;
  readonly pid: number;
  readonly incarnation: string;
  readonly started_at: string;
}

export interface ClaimedInstance {
  readonly recovery: RunRecoveryOptions;
  /** The incarnation that ran before this one under the same id, when it is known to be gone. */
  readonly previous: string | null;
  /** The pid of another live process on this host that holds the id (nothing is taken over early then). */
  readonly inUseBy: number | null;
}

/** `<host>:<12 hex of the data directory's path>`, with `:w<N>` for worker N of a cluster. */
export function defaultInstanceId(dataDir: string, worker: number | null = null): string {
  const host =
    hostname()
      .replace(/[^A-Za-z0-9._-]/g, '-')
      .slice(0, 64) || 'host';
  const dir = createHash('sha256').update(resolve(dataDir)).digest('hex').slice(0, 12);
  return `${host}:${dir}${worker === null ? '' : `:w${worker}`}`;
}

export function newIncarnation(): string {
  return `${Date.now().toString(36)}-${Buffer.from(cryptoRandom(4)).toString('hex')}`;
}

function isInstanceRecord(value: unknown): value is InstanceRecord {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Record<string, unknown>;
  return (
    typeof record.host === 'string' &&
    typeof record.pid === 'number' &&
    typeof record.incarnation === 'string'
  );
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Records this start of the instance and says which incarnation before it is gone (to take over from). */
export async function claimInstance(
  store: StateStore,
  options: { readonly instanceId: string; readonly incarnation?: string },
): Promise<ClaimedInstance> {
  const instanceId = checkInstanceId(options.instanceId, '--instance-id');
  const incarnation = checkInstanceId(options.incarnation ?? newIncarnation(), 'incarnation');
  const host = hostname();
  const held = await store.getMemory(RECOVERY_SCOPE, INSTANCES_NAMESPACE, instanceId);
  const before = held !== null && isInstanceRecord(held.value) ? held.value : null;
  const recovery = { instanceId, incarnation };
  if (before !== null && before.host === host && before.pid !== process.pid && processAlive(before.pid)) {
    return { recovery, previous: null, inUseBy: before.pid };
  }
  const record: InstanceRecord = {
    host,
    pid: process.pid,
    incarnation,
    started_at: new Date().toISOString(),
  };
  await store.putMemory(RECOVERY_SCOPE, {
    namespace: INSTANCES_NAMESPACE,
    key: instanceId,
    value: { ...record },
  });
  return { recovery, previous: before?.incarnation ?? null, inUseBy: null };
}
