/** `agentstate sweep` (remove expired sessions now) and `agentstate migrate` (bring the schema up to date). */
import type { Command } from 'commander';
import { sweepOnce } from '../../lifecycle/sweeper.js';
import { type StoreOptions, storeUrlOf, withStore, withStoreOptions } from '../context.js';
import { print } from '../format.js';

export function registerMaintenanceCommands(program: Command): void {
  program
    .command('sweep')
    .description('delete expired sessions and their messages now (tasks, actions, checkpoints stay)')
    .option('--store <url>', 'store URL')
    .action(async (options: StoreOptions) => {
      const deleted = await withStore(options, (store) => sweepOnce(store));
      print(`swept ${deleted} expired session${deleted === 1 ? '' : 's'} from ${storeUrlOf(options)}`);
    });

  withStoreOptions(
    program.command('migrate').description('create or update the store’s schema (safe to repeat)'),
  ).action(async (options: StoreOptions) => {
    // Opening a durable store applies its pending migrations under a lock, so repeated or concurrent runs are safe.
    const adapter = await withStore(options, async (store) => {
      if (!(await store.ping())) throw new Error(`the ${store.adapter} store does not answer`);
      return store.adapter;
    });
    print(`${adapter} store at ${storeUrlOf(options)} is migrated and ready`);
  });
}
