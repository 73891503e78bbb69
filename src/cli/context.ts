/**
 * What every command shares: the store options (`--store`, `--tenant`, `--user`), opening and closing the
 * store around the work, and the one-sentence error a command ends with.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { AgentStateError } from '../core/errors.js';
import { ID_PREFIXES, type IdKind, isId } from '../core/ids.js';
import { makeFolder } from '../process/folders.js';
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

/**
 * Whether the store the URL names lives inside one process (`memory:`, `sqlite::memory:`, `sqlite:file:...`
 * URIs, whose meaning depends on their parameters): another process or thread cannot open the same data.
 */
export function isInProcessStore(storeUrl: string): boolean {
  if (storeUrl.startsWith('memory:')) return true;
  if (!storeUrl.startsWith('sqlite:')) return false;
  const path = storeUrl.slice('sqlite:'.length);
  return path === '' || path === ':memory:' || path.startsWith('file:');
}

/** The file of a `sqlite:PATH` URL, or null for any other store (and for in-process SQLite). */
export function sqliteFileOf(storeUrl: string): string | null {
  if (!storeUrl.startsWith('sqlite:') || isInProcessStore(storeUrl)) return null;
  return storeUrl.slice('sqlite:'.length);
}

export interface WithStoreOptions {
  /**
   * Create the store when it does not exist yet (a SQLite file): `migrate` does; a command that only reads
   * or changes existing records refuses a file that is not there rather than make an empty one.
   */
  readonly create?: boolean;
}

/** Refuses a `sqlite:` file that does not exist (a mistyped path), before anything is created. */
export function assertStoreExists(storeUrl: string): void {
  const file = sqliteFileOf(storeUrl);
  if (file !== null && !existsSync(file)) {
    throw new CliError(
      `store ${storeUrl} does not exist (run \`agentstate migrate --store ${storeUrl}\` or \`agentstate serve --store ${storeUrl}\` to create it)`,
    );
  }
}

/** Opens the store, runs `work`, and closes the store whatever happens. */
export async function withStore<T>(
  options: StoreOptions,
  work: (store: StateStore) => Promise<T>,
  how: WithStoreOptions = {},
): Promise<T> {
  const url = storeUrlOf(options);
  if (how.create !== true) assertStoreExists(url);
  const store = await openStore(url);
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}

/** The data folder of `serve` and `chat`, made before the store is opened: a bad `--data-dir` leaves no store behind. */
export function prepareDataDir(dataDir: string): void {
  makeFolder(resolve(dataDir), 'for the data (--data-dir)');
}

/** A mistake the user can fix; printed as one sentence, exit code 1. */
export class CliError extends Error {
  override readonly name = 'CliError';
}

const ID_NAMES: Record<IdKind, string> = {
  session: 'session',
  task: 'task',
  action: 'action',
  checkpoint: 'checkpoint',
  event: 'event',
  message: 'message',
  run: 'run',
};

/** What an id of `kind` looks like, for error messages: `sess_ followed by 26 characters (a-z, 2-7)`. */
export function idShape(kind: IdKind): string {
  return `${ID_PREFIXES[kind]} followed by 26 characters from a-z and 2-7`;
}

/** Refuses an id that cannot be one of `kind`, saying what one looks like. */
export function checkId(id: string, kind: IdKind): string {
  if (!isId(id, kind)) {
    const name = ID_NAMES[kind];
    throw new CliError(
      `${JSON.stringify(id)} is not ${/^[aeiou]/.test(name) ? 'an' : 'a'} ${name} id: ${name} ids are ${idShape(kind)}`,
    );
  }
  return id;
}

/** `tenant T` or `tenant T, user U`: where a lookup was made, for a "not found" message. */
export function whereOf(scope: ReadScope): string {
  return scope.user_id === undefined
    ? `tenant ${scope.tenant_id}`
    : `tenant ${scope.tenant_id} for user ${scope.user_id}`;
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
