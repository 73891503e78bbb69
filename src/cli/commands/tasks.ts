/** `agentstate tasks ls`: tasks with their state and status line. */
import { type Command, Option } from 'commander';
import { TASK_STATES, type TaskState } from '../../core/model.js';
import { checkId, type StoreOptions, scopeOf, withStore, withStoreOptions } from '../context.js';
import { print, printJson, shortTime, table } from '../format.js';
import { parseLimit } from './parse.js';

interface LsOptions extends StoreOptions {
  readonly state?: TaskState;
  readonly session?: string;
  readonly limit: number;
  readonly cursor?: string;
  readonly json?: boolean;
}

export function registerTaskCommands(program: Command): void {
  const tasks = program.command('tasks').description('tasks: state machines with slots and a status line');
  withStoreOptions(tasks.command('ls').description('list tasks'))
    .addOption(new Option('--state <state>', 'only tasks in this state').choices(TASK_STATES))
    .option('--session <id>', 'only tasks of this session')
    .option('--limit <n>', 'at most this many (1-500)', parseLimit, 50)
    .option('--cursor <cursor>', 'continue after a previous page')
    .option('--json', 'print JSON')
    .action(async (options: LsOptions) => {
      if (options.session !== undefined) checkId(options.session, 'session');
      const page = await withStore(options, (store) =>
        store.listTasks(scopeOf(options), {
          limit: options.limit,
          ...(options.state ? { state: options.state } : {}),
          ...(options.session ? { session_id: options.session } : {}),
          ...(options.cursor ? { cursor: options.cursor } : {}),
        }),
      );
      if (options.json) return printJson(page);
      if (page.items.length === 0) return print('no tasks');
      const rows = page.items.map((t) => [
        t.id,
        t.user_id,
        t.type,
        t.state,
        shortTime(t.updated_at),
        t.status_line,
      ]);
      print(table(['ID', 'USER', 'TYPE', 'STATE', 'UPDATED', 'STATUS'], rows));
      if (page.next_cursor) print(`more: --cursor ${page.next_cursor}`);
    });
}
