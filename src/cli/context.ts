/**
 * What every command shares: the store options (`--store`, `--tenant`, `--user`), opening and closing the
 * store around the work, and the one-sentence error a command ends with.
 */
import type { Command } from 'commander';
import { AgentStateError } from '../core/errors.js';
import { DEFAULT_STORE_URL, openStore } from '../store/open.js';
import type { ReadScope, StateStore } from '../store/types.js';

export const DEFAULT_CLI_TENANT = 'default';

export interface StoreOptions {
  readonly store?: string;
  readonly tenant?: string;
  readonly user?: string;
}

/** Adds `--store URL`, `--tenant ID`, `--user ID` to a command. */
export function withStoreOptions(command: Command): Command {
  return command
    .option('--store <url>', `store URL (env AGENTSTATE_STORE, default ${DEFAULT_STORE_URL})`)
    .option('--tenant <id>', `tenant to act as (default "${DEFAULT_CLI_TENANT}")`)
    .option('--user <id>', 'only this user’s records (default: every user of the tenant)');
}

export function storeUrlOf(options: StoreOptions): string {
  return options.store ?? process.env.AGENTSTATE_STORE ?? DEFAULT_STORE_URL;
}

export function scopeOf(options: StoreOptions): ReadScope {
  const tenant_id = options.tenant ?? DEFAULT_CLI_TENANT;
  return options.user === undefined ? { tenant_id } : { tenant_id, user_id: options.user };
}

/** Opens the store, runs `work`, and closes the store whatever happens. */
export async function withStore<T>(
  options: StoreOptions,
  work: (store: StateStore) => Promise<T>,
): Promise<T> {
  const store = await openStore(storeUrlOf(options));
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}

/** A mistake the user can fix; printed as one sentence, exit code 1. */
export class CliError extends Error {
  override readonly name = 'CliError';
}

/** One clear sentence for any error, never a stack trace. */
export function describeError(error: unknown): string {
  if (error instanceof CliError) return error.message;
  if (error instanceof AgentStateError) return error.message;
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ECONNREFUSED') return `cannot reach the server: ${error.message}`;
    return error.message || error.name;
  }
  return String(error);
}
