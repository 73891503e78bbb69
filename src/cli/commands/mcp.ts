/**
 * `agentstate mcp`: an MCP server over stdio on a local store, for MCP clients that start it as a child
 * process. It acts as `--tenant` (default `default`) and, with `--user`, as that one user only; without
 * `--user` it sees the whole tenant and its memory tools need a `user_id`.
 *   agentstate mcp --store sqlite:agentstate.db --user ada
 * Streamable HTTP is served by `agentstate serve` at /mcp, with the server's keys and tokens.
 */
import type { Command } from 'commander';
import { CliError, DEFAULT_CLI_TENANT, type StoreOptions, withStore, withStoreOptions } from '../context.js';

function checkName(value: string | undefined, option: string): void {
  if (value !== undefined && value.trim() === '') throw new CliError(`${option} must not be empty.`);
}

export function registerMcpCommands(program: Command): void {
  withStoreOptions(
    program
      .command('mcp')
      .description(
        'serve MCP (Model Context Protocol) over stdio: memory, sessions, tasks, actions, context',
      ),
  )
    .addHelpText(
      'after',
      '\nWith --user, every tool acts as that user only. Over HTTP, `agentstate serve` answers MCP at /mcp.',
    )
    .action(async (options: StoreOptions) => {
      checkName(options.tenant, '--tenant');
      checkName(options.user, '--user');
      const { serveMcpStdio } = await import('../../mcp/stdio.js');
      const { packageVersion } = await import('../program.js');
      const access = { tenant_id: options.tenant ?? DEFAULT_CLI_TENANT, user_id: options.user ?? null };
      const stopping = new AbortController();
      const stop = () => stopping.abort();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      try {
        await withStore(options, (store) =>
          serveMcpStdio({ store, access, version: packageVersion(), signal: stopping.signal }),
        );
      } finally {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
      }
    });
}
