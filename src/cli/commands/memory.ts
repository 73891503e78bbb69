/**
 * `agentstate memory`: one user's long-term memory.
 *   memory ls --user U [--namespace N] [--prefix P]   (without --namespace: `preferences` and `facts`)
 *   memory get --user U N K
 *   memory put --user U N K JSON [--ttl S]
 *   memory rm --user U N K
 * get, put and rm also take the user first, without --user: `memory get U N K`.
 * Namespaces starting with `_` are agentstate's own (compaction summaries) and are refused here.
 */
import { type Command, InvalidArgumentError } from 'commander';
import type { JsonValue } from '../../core/json.js';
import type { MemoryItem } from '../../core/model.js';
import { CONTEXT_NAMESPACES } from '../../memory/namespaces.js';
import { userMemory } from '../../memory/user-memory.js';
import { DEFAULT_STORE_URL } from '../../store/open.js';
import type { Scope } from '../../store/types.js';
import { CliError, DEFAULT_CLI_TENANT, type StoreOptions, withStore } from '../context.js';
import { compactJson, print, printJson, shortTime, table } from '../format.js';
import { parseLimit } from './parse.js';

interface MemoryOptions {
  readonly store?: string;
  readonly tenant?: string;
  readonly json?: boolean;
}

interface UserOptions extends MemoryOptions {
  readonly user?: string;
}

interface LsOptions extends UserOptions {
  readonly namespace?: string;
  readonly prefix?: string;
  readonly limit: number;
}

interface PutOptions extends UserOptions {
  readonly ttl?: number;
}

function storeOptions(options: MemoryOptions): StoreOptions {
  return {
    ...(options.store === undefined ? {} : { store: options.store }),
    ...(options.tenant === undefined ? {} : { tenant: options.tenant }),
  };
}

function scopeFor(options: MemoryOptions, user: string): Scope {
  if (user.trim() === '') throw new CliError('the user id must not be empty.');
  return { tenant_id: options.tenant ?? DEFAULT_CLI_TENANT, user_id: user };
}

function withCommon(command: Command): Command {
  return command
    .option('--store <url>', `store URL (env AGENTSTATE_STORE, default ${DEFAULT_STORE_URL})`)
    .option('--tenant <id>', `tenant to act as (default "${DEFAULT_CLI_TENANT}")`);
}

const POSITIONAL_USER_HELP =
  '\nThe user may also come first instead of --user: memory <get|put|rm> <user> <namespace> <key> ...';

function usage(rest: string): string {
  return `[options] --user <id> ${rest}`;
}

/**
 * The user and the other arguments of get/put/rm: `--user U N K ...`, or the user first, `U N K ...`. Too
 * many or too few arguments, or the user given twice, are refused.
 */
function userAndArgs(
  command: string,
  args: readonly string[],
  options: UserOptions,
  names: readonly string[],
): string[] {
  const shape = names.map((n) => `<${n}>`).join(' ');
  if (options.user !== undefined) {
    if (args.length === names.length) return [options.user, ...args];
    if (args.length === names.length + 1)
      throw new CliError(
        `give the user once: memory ${command} --user ${options.user} ${shape}, without a user before them.`,
      );
  } else if (args.length === names.length + 1) {
    return [...args];
  } else if (args.length === names.length) {
    throw new CliError(`memory ${command} needs --user <id> (memory ${command} --user <id> ${shape}).`);
  }
  throw new CliError(
    `memory ${command} takes ${shape} after --user <id>, got ${args.length} argument${args.length === 1 ? '' : 's'}.`,
  );
}

function parseTtl(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || !Number.isSafeInteger(n))
    throw new InvalidArgumentError('must be a whole number of seconds, 1 or more.');
  return n;
}

function parseValue(text: string): JsonValue {
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    throw new CliError(
      `the value must be JSON (for example '"business"', '42' or '{"seat":"aisle"}'), got ${JSON.stringify(text)}.`,
    );
  }
}

function rows(items: readonly MemoryItem[]): string[][] {
  return items.map((i) => [
    i.namespace,
    i.key,
    compactJson(i.value),
    shortTime(i.updated_at),
    shortTime(i.expires_at),
  ]);
}

export function registerMemoryCommands(program: Command): void {
  const memory = program.command('memory').description('long-term memory: what agents remember about a user');

  withCommon(memory.command('ls').description("list a user's memory items"))
    .option('--user <id>', 'the user (required)')
    .option('--namespace <name>', 'only this namespace (default: preferences and facts)')
    .option('--prefix <p>', 'only keys starting with this')
    .option('--limit <n>', 'at most this many per namespace (1-500)', parseLimit, 100)
    .option('--json', 'print JSON')
    .action(async (options: LsOptions) => {
      if (options.user === undefined) throw new CliError('memory ls needs --user <id>.');
      const scope = scopeFor(options, options.user);
      const namespaces = options.namespace === undefined ? CONTEXT_NAMESPACES : [options.namespace];
      const items = await withStore(storeOptions(options), async (store) => {
        const mem = userMemory(store, scope);
        const out: MemoryItem[] = [];
        for (const ns of namespaces) {
          const opts = options.prefix === undefined ? {} : { prefix: options.prefix };
          out.push(...(await mem.all(ns, { ...opts, max: options.limit })));
        }
        return out;
      });
      if (options.json) return printJson(items);
      if (items.length === 0) return print(`no memory items for user ${options.user}`);
      print(table(['NAMESPACE', 'KEY', 'VALUE', 'UPDATED', 'EXPIRES'], rows(items)));
    });

  withCommon(memory.command('get').description('print one memory item'))
    .usage(usage('<namespace> <key>'))
    .argument('<args...>')
    .option('--user <id>', 'the user (or give it first: memory get <user> <namespace> <key>)')
    .option('--json', 'print the whole item as JSON (default: the value)')
    .addHelpText('after', POSITIONAL_USER_HELP)
    .action(async (args: string[], options: UserOptions) => {
      const [user, namespace, key] = userAndArgs('get', args, options, ['namespace', 'key']) as [
        string,
        string,
        string,
      ];
      const scope = scopeFor(options, user);
      const item = await withStore(storeOptions(options), (store) =>
        userMemory(store, scope).get(namespace, key),
      );
      if (item === null) throw new CliError(`no memory item ${namespace}/${key} for user ${user}.`);
      printJson(options.json ? item : item.value);
    });

  withCommon(memory.command('put').description('write one memory item (the value is JSON)'))
    .usage(usage('<namespace> <key> <json>'))
    .argument('<args...>')
    .option('--user <id>', 'the user (or give it first: memory put <user> <namespace> <key> <json>)')
    .option('--ttl <seconds>', 'forget it after this many seconds', parseTtl)
    .option('--json', 'print the stored item as JSON')
    .addHelpText('after', POSITIONAL_USER_HELP)
    .action(async (args: string[], options: PutOptions) => {
      const [user, namespace, key, json] = userAndArgs('put', args, options, [
        'namespace',
        'key',
        'json',
      ]) as [string, string, string, string];
      const scope = scopeFor(options, user);
      const value = parseValue(json);
      const item = await withStore(
        storeOptions(options),
        (store) => userMemory(store, scope).put(namespace, key, value, { ttlSeconds: options.ttl ?? null }),
        { create: true },
      );
      if (options.json) return printJson(item);
      const expires = item.expires_at === null ? '' : `, expires ${shortTime(item.expires_at)}`;
      print(`stored ${item.namespace}/${item.key} for user ${item.user_id}${expires}`);
    });

  withCommon(memory.command('rm').description('delete one memory item'))
    .usage(usage('<namespace> <key>'))
    .argument('<args...>')
    .option('--user <id>', 'the user (or give it first: memory rm <user> <namespace> <key>)')
    .addHelpText('after', POSITIONAL_USER_HELP)
    .action(async (args: string[], options: UserOptions) => {
      const [user, namespace, key] = userAndArgs('rm', args, options, ['namespace', 'key']) as [
        string,
        string,
        string,
      ];
      const scope = scopeFor(options, user);
      const deleted = await withStore(storeOptions(options), (store) =>
        userMemory(store, scope).delete(namespace, key),
      );
      if (!deleted) throw new CliError(`no memory item ${namespace}/${key} for user ${user}.`);
      print(`deleted ${namespace}/${key} for user ${user}`);
    });
}
