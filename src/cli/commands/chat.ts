/**
 * `agentstate chat`: talk to an agent in the terminal. The reply is written as it streams, with a line for
 * each task or action change as it happens (chat/live.ts); then, on a terminal, the reply is shown beside
 * the session's open tasks with their state, slots and status line (elsewhere the tasks follow the streamed
 * reply). Leave with /quit (or Ctrl-D) and come back with `--session ID`.
 */
import { createInterface } from 'node:readline';
import type { Command } from 'commander';
import type { ChatBackend } from '../chat/backend.js';
import { LiveTurn } from '../chat/live.js';
import { renderTurn, taskLines } from '../chat/render.js';
import {
  CliError,
  checkId,
  DEFAULT_CLI_TENANT,
  describeError,
  prepareDataDir,
  storeUrlOf,
} from '../context.js';
import { print } from '../format.js';

interface ChatOptions {
  readonly agent: string;
  readonly session?: string;
  readonly server?: string;
  readonly store?: string;
  readonly token?: string;
  readonly tenant?: string;
  readonly user?: string;
  readonly dataDir: string;
  readonly agents?: string;
  readonly model?: string;
  readonly openaiModel?: string;
}

const HELP = 'type a message; /tasks shows the open tasks, /quit leaves (the session stays)';

/** The options given on the command line (not defaults), by attribute name. */
type Given = (name: keyof ChatOptions) => boolean;

/** Refuses options that would be ignored: those of a local store with --server, --token without it. */
function checkCombination(options: ChatOptions, given: Given): void {
  if (options.server !== undefined) {
    if (options.store !== undefined) throw new CliError('use either --server or --store, not both');
    const local = (['tenant', 'dataDir', 'agents', 'openaiModel'] as const).filter(given);
    if (local.length > 0) {
      const names = local.map((name) => `--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`);
      throw new CliError(
        `${names.join(' and ')} only appl${names.length === 1 ? 'ies' : 'y'} with --store, not with --server (the server has its own tenants, data, agents and models)`,
      );
    }
  } else if (options.token !== undefined) {
    throw new CliError('--token is for --server; a chat on --store needs no token');
  }
  if (options.session !== undefined) {
    checkId(options.session, 'session');
    if (given('agent')) {
      throw new CliError(
        '--agent names the agent of a new session; --session comes back to a session with its own agent',
      );
    }
    if (given('model')) {
      throw new CliError(
        '--model names the model of a new session; --session comes back to a session with its own model',
      );
    }
  }
}

/** A word of a command line, quoted for a POSIX shell when it needs to be. */
function shellWord(word: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** The command that comes back to `sessionId` with the same options (store or server, tenant, user...). */
export function comeBackCommand(sessionId: string, options: ChatOptions, given: Given): string {
  const words = ['agentstate', 'chat', '--session', sessionId];
  const add = (flag: string, value: string | undefined) => {
    if (value !== undefined) words.push(flag, value);
  };
  add('--server', options.server);
  // Never the token itself on the screen: a placeholder the reader fills in (or AGENTSTATE_TOKEN).
  if (options.token !== undefined) words.push('--token', 'TOKEN');
  add('--store', options.store);
  add('--tenant', options.tenant);
  add('--user', options.user);
  if (given('dataDir')) add('--data-dir', options.dataDir);
  add('--agents', options.agents);
  add('--openai-model', options.openaiModel);
  return words.map(shellWord).join(' ');
}

async function backendFor(options: ChatOptions): Promise<ChatBackend> {
  if (options.server !== undefined) {
    const { createHttpBackend } = await import('../chat/http-backend.js');
    return createHttpBackend(options.server, options.token ?? process.env.AGENTSTATE_TOKEN, options.user);
  }
  prepareDataDir(options.dataDir);
  const { createStoreBackend } = await import('../chat/store-backend.js');
  const scope = { tenant_id: options.tenant ?? DEFAULT_CLI_TENANT, user_id: options.user ?? 'default' };
  const { resolveModels } = await import('../../server/models.js');
  const models = resolveModels({
    env: process.env,
    ...(options.model === undefined ? {} : { model: options.model }),
    ...(options.openaiModel === undefined ? {} : { openaiModel: options.openaiModel }),
  });
  return createStoreBackend(storeUrlOf(options), scope, options.dataDir, options.agents, models);
}

function columns(): number {
  return process.stdout.columns ?? 100;
}

async function converse(backend: ChatBackend, options: ChatOptions): Promise<string> {
  const opened = await backend.open(options.session, options.agent, options.model);
  const { session } = opened;
  const model = opened.model === undefined ? '' : ` · model ${opened.model}`;
  print(
    `agentstate chat · ${session.agent ?? options.agent}${model} · session ${session.id} · ${backend.where}`,
  );
  print(HELP);
  if (options.session !== undefined) {
    print(`back in session ${session.id}; the last messages:`);
    for (const m of opened.recent) print(`  ${m.role}: ${m.content}`);
    print(taskLines(opened.tasks, columns()).join('\n'));
  }
  const rl = createInterface({
    input: process.stdin,
    output: process.stdout,
    terminal: process.stdin.isTTY === true,
  });
  rl.setPrompt('you> ');
  rl.prompt();
  for await (const raw of rl) {
    const line = raw.trim();
    if (line === '/quit' || line === '/exit') break;
    if (line === '/help') print(HELP);
    else if (line === '/tasks') print(taskLines(await backend.openTasks(session.id), columns()).join('\n'));
    else if (line !== '') {
      const live = new LiveTurn({
        write: (text) => process.stdout.write(text),
        isTTY: process.stdout.isTTY === true,
        columns: columns(),
      });
      try {
        const turn = await backend.turn(session.id, line, (event) => live.event(event));
        // The streamed reply stays where it cannot be erased: the tasks follow it; else the usual screen.
        if (live.finish(true)) print(taskLines(turn.tasks, columns()).join('\n'));
        else print(renderTurn('agent', turn.reply, turn.tasks, columns()));
      } catch (error) {
        live.finish(false);
        print(`error: ${describeError(error)}`);
      }
    }
    rl.prompt();
  }
  rl.close();
  return session.id;
}

export function registerChatCommands(program: Command): void {
  program
    .command('chat')
    .description('chat with an agent in the terminal, with its tasks shown beside each reply')
    .option('--agent <name>', 'the agent of a new session', 'flight_booking')
    .option('--session <id>', 'come back to this session')
    .option('--server <url>', 'talk to an agentstate server')
    .option(
      '--store <url>',
      'or run the agent here, on this store (default sqlite:./.agentstate/agentstate.db)',
    )
    .option('--token <token>', 'bearer token for --server (env AGENTSTATE_TOKEN)')
    .option('--tenant <id>', `tenant for --store (default "${DEFAULT_CLI_TENANT}")`)
    .option('--user <id>', 'user of the session (default "default")')
    .option('--data-dir <dir>', 'where the demo tools keep their work (with --store)', '.agentstate')
    .option('--agents <module>', 'a module exporting more agents (with --store)')
    .option(
      '--model <name>',
      'the model of a new session: rules, openai (with --store: OPENAI_BASE_URL, OPENAI_API_KEY) or one the server configured',
    )
    .option(
      '--openai-model <name>',
      "with --store, the openai model's name at its endpoint (env AGENTSTATE_OPENAI_MODEL)",
    )
    .action(async (options: ChatOptions, command: Command) => {
      const given: Given = (name) => {
        const source = command.getOptionValueSource(name);
        return source !== undefined && source !== 'default';
      };
      checkCombination(options, given);
      const backend = await backendFor(options);
      try {
        const id = await converse(backend, options);
        print(`left session ${id}; come back with: ${comeBackCommand(id, options, given)}`);
      } finally {
        await backend.close();
      }
    });
}
