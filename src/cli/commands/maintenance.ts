/** `agentstate sweep` (remove expired sessions now) and `agentstate migrate` (bring the schema up to date). */
import type { Command } from 'commander';
import { retentionCutoffs, sweepRetentionOnce } from '../../lifecycle/retention.js';
import { sweepOnce } from '../../lifecycle/sweeper.js';
import { CliError, type StoreOptions, storeUrlOf, withStore } from '../context.js';
import { print } from '../format.js';

export function registerMaintenanceCommands(program: Command): void {
  program
    .command('sweep')
    .description(
      'delete expired sessions and their messages now, and tasks, actions and checkpoints past their retention',
    )
    .option('--store <url>', 'store URL')
    .option(
      '--retention-days <days>',
      'retention of tasks, actions and checkpoints after their last change',
      '30',
    )
    .action(async (options: StoreOptions & { retentionDays: string }) => {
      const days = Number(options.retentionDays);
      if (!Number.isFinite(days) || days <= 0)
        throw new CliError(`--retention-days must be a positive number`);
      const { deleted, retained } = await withStore(options, async (store) => {
        const deleted = await sweepOnce(store);
        const policy = { taskDays: days, actionDays: days, checkpointDays: days };
        const retained = await sweepRetentionOnce(store, retentionCutoffs(policy, Date.now()));
        return { deleted, retained };
      });
      print(`swept ${deleted} expired session${deleted === 1 ? '' : 's'} from ${storeUrlOf(options)}`);
      print(
        `past retention: ${retained.tasks} tasks, ${retained.actions} actions, ${retained.checkpoints} checkpoints deleted`,
      );
    });

  // The schema is the whole store's: no tenant or user to choose.
  program
    .command('migrate')
    .description('create or update the store’s schema (safe to repeat)')
    .option('--store <url>', 'store URL (env AGENTSTATE_STORE)')
    .action(async (options: StoreOptions) => {
      // Opening a durable store applies its pending migrations under a lock, so repeated or concurrent runs are safe.
      const adapter = await withStore(
        options,
        async (store) => {
          if (!(await store.ping())) throw new Error(`the ${store.adapter} store does not answer`);
          return store.adapter;
        },
        { create: true },
      );
      print(`${adapter} store at ${storeUrlOf(options)} is migrated and ready`);
    });
}
