/**
 * Recovery without a client (issue 32): at start and then on an interval, a server reads the marks of runs
 * in flight (run-marks.ts: one read of agentstate's own scope, whatever the number of tenants) and resumes
 * each whose session lease it can take: the runner that held it died. The session lease makes sure that
 * exactly one process runs a session at a time, so of several servers recovering at once one resumes the
 * run and the others find it busy (then, gone). A mark of this instance's previous incarnation (the same
 * `--instance-id`, restarted) has its lease freed first, so the run resumes at once instead of after the
 * lease's TTL. Runs of agents this server does not know are left alone (another server may know them).
 */
import { isAgentStateError } from '../../core/errors.js';
import {
  deleteRunMark,
  isRunMark,
  RECOVERY_SCOPE,
  RUN_MARKS_NAMESPACE,
  type RunMark,
  type RunRecoveryOptions,
} from '../../runtime/run-marks.js';
import type { StateStore } from '../../store/types.js';
import type { TurnRunner } from '../turn-runner.js';

export const DEFAULT_RECOVER_EVERY_MS = 30_000;
/** Marks read per store call; a pass reads at most MAX_MARKS_PER_PASS. */
const MARKS_PAGE = 100;
const MAX_MARKS_PER_PASS = 1_000;
/** Resumes a pass runs at once. */
const PARALLEL_RESUMES = 4;
/** After this many failed attempts in this process, a mark is left alone (its TTL removes it). */
const MAX_ATTEMPTS = 3;

export interface RecoveryOptions {
  readonly store: StateStore;
  /** What resumes a session's run: the server's turn runner (turn threads included). */
  readonly turns: Pick<TurnRunner, 'resume'>;
  readonly instance: RunRecoveryOptions;
  /**
   * Whether leases of this instance's other incarnations are freed at once (true when they are known to be
   * gone: instance.ts, `claimInstance`). Default true.
   */
  readonly takeOverOwn?: boolean;
  /** The agents this server runs; marks of other agents are left alone. */
  readonly agents: readonly string[];
  /** Time between passes. Default 30 s. */
  readonly intervalMs?: number;
  /**
   * Time to the next pass when one found runs whose lease is still held by another process (a dead
   * runner's lease lasts its TTL): default the session lease TTL, 10 s.
   */
  readonly busyRetryMs?: number;
  readonly onRecovered?: (run: RecoveredRun) => void;
  readonly onError?: (error: unknown, mark: RunMark | null) => void;
}

export interface RecoveredRun {
  readonly mark: RunMark;
  /** The run that answered: the mark's when it was resumed. */
  readonly run_id: string;
  /** True when the run was continued; false when it had completed already (its mark was left over). */
  readonly resumed: boolean;
  /** True when the lease of this instance's previous incarnation was freed for it. */
  readonly took_over: boolean;
  readonly ms: number;
}

export interface RecoveryReport {
  readonly marks: number;
  readonly recovered: RecoveredRun[];
  /** Marks whose session lease another process holds (a live run, or a dead one's lease not yet expired). */
  readonly busy: number;
  /** Marks removed: their session has no run to resume any more. */
  readonly cleared: number;
  readonly failed: number;
  readonly skipped: number;
}

export interface Recovery {
  runNow(): Promise<RecoveryReport>;
  /** Stops the interval and waits for a pass in progress. Safe to call twice. */
  stop(): Promise<void>;
}

type Outcome = 'recovered' | 'busy' | 'cleared' | 'failed' | 'skipped';

/** One pass: every mark read and tried. */
export async function recoverOnce(
  options: RecoveryOptions,
  attempts: Map<string, number> = new Map(),
): Promise<RecoveryReport> {
  const { store } = options;
  const marks: RunMark[] = [];
  let cursor: string | null = null;
  do {
    const page = await store.listMemory(RECOVERY_SCOPE, RUN_MARKS_NAMESPACE, {
      limit: MARKS_PAGE,
      ...(cursor === null ? {} : { cursor }),
    });
    for (const item of page.items) if (isRunMark(item.value)) marks.push(item.value);
    cursor = page.next_cursor;
  } while (cursor !== null && marks.length < MAX_MARKS_PER_PASS);
  const recovered: RecoveredRun[] = [];
  const counts: Record<Outcome, number> = { recovered: 0, busy: 0, cleared: 0, failed: 0, skipped: 0 };
  let next = 0;
  const worker = async () => {
    while (next < marks.length) {
      const mark = marks[next++] as RunMark;
      const outcome = await recoverMark(options, mark, attempts, (run) => {
        recovered.push(run);
        options.onRecovered?.(run);
      });
      counts[outcome]++;
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL_RESUMES, marks.length) }, worker));
  return {
    marks: marks.length,
    recovered,
    busy: counts.busy,
    cleared: counts.cleared,
    failed: counts.failed,
    skipped: counts.skipped,
  };
}

async function recoverMark(
  options: RecoveryOptions,
  mark: RunMark,
  attempts: Map<string, number>,
  onRecovered: (run: RecoveredRun) => void,
): Promise<Outcome> {
  const { store, instance } = options;
  const key = `${mark.tenant_id}\n${mark.user_id}\n${mark.run_id}`;
  if (!options.agents.includes(mark.agent) || (attempts.get(key) ?? 0) >= MAX_ATTEMPTS) return 'skipped';
  const scope = { tenant_id: mark.tenant_id, user_id: mark.user_id };
  const startedAt = performance.now();
  let tookOver = false;
  try {
    const own = mark.instance_id === instance.instanceId && mark.incarnation !== instance.incarnation;
    if (own && options.takeOverOwn !== false) {
      tookOver = await store.releaseLease(scope, `session:${mark.session_id}`, mark.owner);
    }
    const output = await options.turns.resume(scope, { id: mark.session_id });
    // The run's own last commit removed its mark; one left over (a run that completed before) goes now.
    await deleteRunMark(store, scope, mark.run_id);
    const runId = typeof output.run_id === 'string' ? output.run_id : mark.run_id;
    const resumed = output.resumed === true && runId === mark.run_id;
    onRecovered({
      mark,
      run_id: runId,
      resumed,
      took_over: tookOver,
      ms: Math.round(performance.now() - startedAt),
    });
    attempts.delete(key);
    return 'recovered';
  } catch (error) {
    if (isAgentStateError(error, 'conflict')) {
      const leased = (error.details as { lease?: unknown } | undefined)?.lease !== undefined;
      // This process's own run, still going: nothing to wait for.
      const mine = mark.instance_id === instance.instanceId && mark.incarnation === instance.incarnation;
      if (leased) return mine ? 'skipped' : 'busy';
    }
    // No run to resume (`conflict` without a lease), the session gone or ended: nothing will ever resume it.
    if (
      isAgentStateError(error, 'conflict') ||
      isAgentStateError(error, 'not_found') ||
      (await ended(store, mark))
    ) {
      await deleteRunMark(store, scope, mark.run_id).catch(() => undefined);
      return 'cleared';
    }
    attempts.set(key, (attempts.get(key) ?? 0) + 1);
    options.onError?.(error, mark);
    return 'failed';
  }
}

/** Whether the mark's session is gone or ended (a run of it can never be resumed). */
async function ended(store: StateStore, mark: RunMark): Promise<boolean> {
  const scope = { tenant_id: mark.tenant_id, user_id: mark.user_id };
  const session = await store.getSession(scope, mark.session_id).catch(() => undefined);
  return session === null || session?.status === 'ended';
}

/** Recovers at once, then on the interval (sooner while a dead runner's lease may still be running out). */
export function startRecovery(options: RecoveryOptions): Recovery {
  const intervalMs = options.intervalMs ?? DEFAULT_RECOVER_EVERY_MS;
  const busyRetryMs = Math.min(intervalMs, options.busyRetryMs ?? 10_000);
  if (!Number.isFinite(intervalMs) || intervalMs < 100) {
    throw new RangeError(`recovery interval must be at least 100 ms, got ${intervalMs}`);
  }
  const attempts = new Map<string, number>();
  let running: Promise<RecoveryReport> | null = null;
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  const empty: RecoveryReport = { marks: 0, recovered: [], busy: 0, cleared: 0, failed: 0, skipped: 0 };

  const runNow = (): Promise<RecoveryReport> => {
    if (running !== null) return running;
    running = recoverOnce(options, attempts)
      .catch((error: unknown) => {
        options.onError?.(error, null);
        return empty;
      })
      .finally(() => {
        running = null;
      });
    return running;
  };
  const schedule = (delay: number) => {
    timer = setTimeout(() => {
      if (stopped) return;
      void runNow().then((report) => {
        if (!stopped) schedule(report.busy > 0 ? busyRetryMs : intervalMs);
      });
    }, delay);
    timer.unref();
  };
  schedule(0);
  return {
    runNow,
    async stop() {
      stopped = true;
      if (timer !== null) clearTimeout(timer);
      if (running !== null) await running;
    },
  };
}
