/**
 * The `agentstate` command. Each command group lives in `commands/<group>.ts` and exports
 * `registerXCommands(program)`; add a group by writing that file and listing it in COMMAND_GROUPS.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { registerLoadCommands } from '../harness/load/index.js';
import { registerActionCommands } from './commands/actions.js';
import { registerAirlineCommands } from './commands/airline.js';
import { registerChatCommands } from './commands/chat.js';
import { registerHarnessCommands } from './commands/harnesses.js';
import { registerInspectCommands } from './commands/inspect.js';
import { registerMaintenanceCommands } from './commands/maintenance.js';
import { registerMcpCommands } from './commands/mcp.js';
import { registerMemoryCommands } from './commands/memory.js';
import { registerServeCommands } from './commands/serve.js';
import { registerSessionCommands } from './commands/sessions.js';
import { registerTaskCommands } from './commands/tasks.js';

export type RegisterCommands = (program: Command) => void;

export const COMMAND_GROUPS: RegisterCommands[] = [
  registerServeCommands,
  registerChatCommands,
  registerSessionCommands,
  registerTaskCommands,
  registerActionCommands,
  registerInspectCommands,
  registerMaintenanceCommands,
  registerHarnessCommands,
  registerMemoryCommands,
  registerMcpCommands,
  registerLoadCommands,
  registerAirlineCommands,
];

/** The version in the package.json above this file (from src/cli or dist/src/cli alike). */
export function packageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'agentstate' && pkg.version) return pkg.version;
    } catch {
      // not here; look one level up
    }
    dir = dirname(dir);
  }
  return '0.0.0';
}

export function buildProgram(groups: readonly RegisterCommands[] = COMMAND_GROUPS): Command {
  const program = new Command('agentstate')
    .description('agentstate: the state layer for AI agents (sessions, tasks, actions, checkpoints, memory)')
    .version(packageVersion(), '-v, --version', 'print the version')
    .showHelpAfterError('(run with --help for usage)');
  for (const register of groups) register(program);
  return program;
}
