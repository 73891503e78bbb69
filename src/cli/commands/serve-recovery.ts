/**
 * `serve`'s recovery options (issue 32): `--instance-id` (the instance's stable identity), `--recover-every`
 * (how often runs a dead instance left are looked for) and `--no-recover`, and the recovery started with
 * them (src/server/recovery).
 */
import type { Command } from 'commander';
import type { RunRecoveryOptions } from '../../runtime/run-marks.js';
import { claimInstance, defaultInstanceId } from '../../server/recovery/instance.js';
import { type Recovery, startRecovery } from '../../server/recovery/recover.js';
import type { TurnRunner } from '../../server/turn-runner.js';
import type { StateStore } from '../../store/types.js';
import { CliError } from '../context.js';

export interface RecoveryCliOptions {
  readonly instanceId?: string;
  readonly recoverEvery: string;
  /** False with `--no-recover`. */
  readonly recover: boolean;
}

export function addRecoveryOptions(command: Command): Command {
  return command
    .option(
      '--instance-id <id>',
      "this server's identity, stable across restarts: a restart frees its own runs' leases at once (env AGENTSTATE_INSTANCE_ID; default: the host and the data directory)",
      process.env.AGENTSTATE_INSTANCE_ID,
    )
    .option(
      '--recover-every <duration>',
      'how often runs that a dead server left interrupted are looked for and completed, e.g. 30s, 500ms, 2m (env AGENTSTATE_RECOVER_EVERY)',
      process.env.AGENTSTATE_RECOVER_EVERY ?? '30s',
    )
    .option('--no-recover', 'do not complete runs that a dead server left interrupted');
}

/** `500ms`, `30s`, `2m` or a whole number of milliseconds, from 100 ms to 24 hours. */
export function parseRecoverEvery(text: string): number {
  const match = /^(\d+)(ms|s|m)?$/.exec(text.trim());
  const unit = match?.[2] ?? 'ms';
  const ms =
    match === null ? Number.NaN : Number(match[1]) * (unit === 'm' ? 60_000 : unit === 's' ? 1_000 : 1);
  if (!Number.isFinite(ms) || ms < 100 || ms > 86_400_000) {
    throw new CliError(
      `--recover-every must be a duration from 100ms to 24h such as 500ms, 30s or 2m, got ${JSON.stringify(text)}`,
    );
  }
  return ms;
}

export interface ServeRecovery {
  /** What the runtime marks its runs with (RuntimeOptions.recovery). */
  readonly recovery: RunRecoveryOptions;
  /** Starts the passes (at once, then on the interval). */
  start(turns: Pick<TurnRunner, 'resume'>, agents: readonly string[]): void;
  stop(): Promise<void>;
}

export interface RecoveryLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

/** Claims the instance's identity in the store; null with `--no-recover` (nothing is marked then). */
export async function prepareRecovery(
  store: StateStore,
  options: RecoveryCliOptions & { readonly dataDir: string; readonly worker: number | null },
  log: () => RecoveryLog,
): Promise<ServeRecovery | null> {
  if (!options.recover) return null;
  const intervalMs = parseRecoverEvery(options.recoverEvery);
  const instanceId = options.instanceId ?? defaultInstanceId(options.dataDir, options.worker);
  let claimed: Awaited<ReturnType<typeof claimInstance>>;
  try {
    claimed = await claimInstance(store, { instanceId });
  } catch (error) {
    throw new CliError(error instanceof Error ? error.message : String(error));
  }
  let running: Recovery | null = null;
  return {
    recovery: claimed.recovery,
    start(turns, agents) {
      const logger = log();
      if (claimed.inUseBy !== null) {
        logger.warn(
          { instance_id: instanceId, pid: claimed.inUseBy },
          'another live server on this host has this instance id: its runs are not taken over early',
        );
      }
      running = startRecovery({
        store,
        turns,
        agents,
        instance: claimed.recovery,
        takeOverOwn: claimed.inUseBy === null,
        intervalMs,
        onRecovered: (run) =>
          logger.info(
            {
              recovered: {
                tenant_id: run.mark.tenant_id,
                session_id: run.mark.session_id,
                run_id: run.run_id,
                resumed: run.resumed,
                took_over: run.took_over,
                from_instance: run.mark.instance_id,
                ms: run.ms,
              },
            },
            run.resumed ? 'recovered an interrupted run' : 'removed the mark of a completed run',
          ),
        onError: (error, mark) =>
          logger.error(
            { err: error, ...(mark === null ? {} : { session_id: mark.session_id, run_id: mark.run_id }) },
            'recovery of an interrupted run failed',
          ),
      });
    },
    async stop() {
      await running?.stop();
    },
  };
}
