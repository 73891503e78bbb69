/**
 * A test server with the real agent runtime (built-in agents, the demo tools, the `rules` model unless
 * `models` names others) over an in-memory store: what the tests of turns and their run events share.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { linkRuntime } from '../../src/cli/commands/runtime-link.js';
import type { ModelRegistry } from '../../src/models/types.js';
import { openStore } from '../../src/store/open.js';
import type { StateStore } from '../../src/store/types.js';
import { startTestServer, type TestServer } from './harness.js';

export interface RuntimeServer {
  readonly server: TestServer;
  readonly store: StateStore;
  /**
   * Closes the server (ending every connection: an aborted fetch can leave a spare one that a close would
   * wait for), the runtime and the store.
   */
  close(): Promise<void>;
}

export async function startRuntimeServer(
  options: { readonly models?: ModelRegistry } = {},
): Promise<RuntimeServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'agentstate-runtime-server-'));
  const store = await openStore('memory:');
  const runtime = await linkRuntime(dataDir, undefined, options.models);
  const server = await startTestServer({ store, agents: runtime.setup });
  return {
    server,
    store,
    async close() {
      const closing = server.close();
      server.app.server.closeAllConnections();
      await closing;
      await runtime.close();
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
