/**
 * `agentstate sessions ls`: the sessions of a tenant (or one user), newest first; `fork`, `rewind` and
 * `branches` are in branches.ts.
 */
import { type Command, Option } from 'commander';
import { SESSION_STATUSES } from '../../core/model.js';
import { type StoreOptions, scopeOf, withStore, withStoreOptions } from '../context.js';
import { print, printJson, shortTime, table } from '../format.js';
import { registerBranchCommands } from './branches.js';
import { parseLimit } from './parse.js';

/** The statuses a listed session can have: an expired session is gone from every read (the sweep deletes it). */
const LISTED_STATUSES = SESSION_STATUSES.filter((status) => status !== 'expired');

interface LsOptions extends StoreOptions {
  readonly status?: (typeof SESSION_STATUSES)[number];
  readonly limit: number;
  readonly cursor?: string;
  readonly json?: boolean;
}

export function registerSessionCommands(program: Command): void {
  const sessions = program.command('sessions').description('sessions: the conversations agents keep');
  withStoreOptions(sessions.command('ls').description('list sessions'))
    .addOption(
      new Option('--status <status>', 'only sessions with this status (expired ones are gone)').choices(
        LISTED_STATUSES,
      ),
    )
    .option('--limit <n>', 'at most this many (1-500)', parseLimit, 50)
    .option('--cursor <cursor>', 'continue after a previous page')
    .option('--json', 'print JSON')
    .action(async (options: LsOptions) => {
      const page = await withStore(options, (store) =>
        store.listSessions(scopeOf(options), {
          limit: options.limit,
          ...(options.status ? { status: options.status } : {}),
          ...(options.cursor ? { cursor: options.cursor } : {}),
        }),
      );
      if (options.json) return printJson(page);
      if (page.items.length === 0) return print('no sessions');
      const rows = page.items.map((s) => [
        s.id,
        s.user_id,
        s.agent ?? '-',
        s.status,
        shortTime(s.last_activity_at),
        shortTime(s.expires_at),
      ]);
      print(table(['ID', 'USER', 'AGENT', 'STATUS', 'LAST ACTIVITY', 'EXPIRES'], rows));
      if (page.next_cursor) print(`more: --cursor ${page.next_cursor}`);
    });
  registerBranchCommands(sessions);
}
