/**
 * `agentstate actions ls [--status UNKNOWN]` and `agentstate actions resolve ID --status SUCCESS|FAILED`:
 * how a person settles an action whose outcome the runtime could not know.
 */
import { userInfo } from 'node:os';
import { type Command, Option } from 'commander';
import type { JsonValue } from '../../core/json.js';
import { ACTION_STATUSES, type ActionStatus } from '../../core/model.js';
import {
  CliError,
  checkId,
  type StoreOptions,
  scopeOf,
  whereOf,
  withStore,
  withStoreOptions,
} from '../context.js';
import { compactJson, print, printJson, shortTime, table } from '../format.js';
import { parseJsonOption, parseLimit } from './parse.js';

interface LsOptions extends StoreOptions {
  readonly status?: ActionStatus;
  readonly task?: string;
  readonly limit: number;
  readonly cursor?: string;
  readonly json?: boolean;
}

interface ResolveOptions extends StoreOptions {
  readonly status: 'SUCCESS' | 'FAILED';
  readonly result?: JsonValue;
  readonly note?: string;
  readonly json?: boolean;
}

function operator(): string {
  try {
    return userInfo().username;
  } catch {
    return 'an operator';
  }
}

export function registerActionCommands(program: Command): void {
  const actions = program.command('actions').description('actions: tool calls recorded before they run');
  withStoreOptions(actions.command('ls').description('list actions'))
    .addOption(new Option('--status <status>', 'only actions with this status').choices(ACTION_STATUSES))
    .option('--task <id>', 'only actions of this task')
    .option('--limit <n>', 'at most this many (1-500)', parseLimit, 50)
    .option('--cursor <cursor>', 'continue after a previous page')
    .option('--json', 'print JSON')
    .action(async (options: LsOptions) => {
      if (options.task !== undefined) checkId(options.task, 'task');
      const page = await withStore(options, (store) =>
        store.listActions(scopeOf(options), {
          limit: options.limit,
          ...(options.status ? { status: options.status } : {}),
          ...(options.task ? { task_id: options.task } : {}),
          ...(options.cursor ? { cursor: options.cursor } : {}),
        }),
      );
      if (options.json) return printJson(page);
      if (page.items.length === 0) return print('no actions');
      const rows = page.items.map((a) => [
        a.id,
        a.task_id,
        a.tool ?? a.type,
        a.status,
        shortTime(a.updated_at),
        a.note ?? compactJson(a.params, 40),
      ]);
      print(table(['ID', 'TASK', 'TOOL', 'STATUS', 'UPDATED', 'NOTE / PARAMS'], rows));
      if (page.next_cursor) print(`more: --cursor ${page.next_cursor}`);
    });

  withStoreOptions(actions.command('resolve <id>').description('settle a PENDING or UNKNOWN action by hand'))
    .addOption(
      new Option('--status <status>', 'what really happened')
        .choices(['SUCCESS', 'FAILED'])
        .makeOptionMandatory(),
    )
    .option('--result <json>', 'the result, as JSON (for SUCCESS)', parseJsonOption)
    .option('--note <text>', 'why; kept on the action')
    .option('--json', 'print the action as JSON')
    .action(async (id: string, options: ResolveOptions) => {
      checkId(id, 'action');
      if (options.status === 'FAILED' && options.result !== undefined) {
        throw new CliError(
          '--result is for --status SUCCESS; a FAILED action has no result (say why with --note)',
        );
      }
      const action = await withStore(options, async (store) => {
        const scope = scopeOf(options);
        const current = await store.getAction(scope, id);
        if (current === null) throw new CliError(`action ${id} not found in ${whereOf(scope)}`);
        if (current.status !== 'PENDING' && current.status !== 'UNKNOWN') {
          throw new CliError(
            `action ${id} is already ${current.status}; only PENDING or UNKNOWN actions are resolved`,
          );
        }
        const note = options.note ?? `resolved from the command line by ${operator()}`;
        return store.resolveAction(scope, id, {
          status: options.status,
          note,
          ...(options.result !== undefined ? { result: options.result } : {}),
          ...(options.status === 'FAILED' ? { error: { code: 'resolved_failed', message: note } } : {}),
        });
      });
      if (options.json) return printJson(action);
      print(`${action.id} is now ${action.status} (${action.note ?? ''})`);
      // The runtime settles the blocked task (and runs its remaining tool calls) when it next runs it.
      print(`task ${action.task_id} goes on at the next turn of its session (or a resume of it)`);
    });
}
