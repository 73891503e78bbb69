/**
 * `agentstate mcp` over stdio, as a local MCP client starts it: the built CLI as a child process on a
 * SQLite file, with the SDK's own client. With --user it acts as that user only; without, as the tenant.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MemoryItem, Session } from '../../src/core/model.js';
import { openStore } from '../../src/store/open.js';
import type { StateStore } from '../../src/store/types.js';
import { BUILT_MAIN, hasStackTrace, spawnBuiltCli, tempDir } from '../cli/run.js';
import { connectStdio, newClient, ok, refused, resourceText } from './helpers.js';

const temp = tempDir();
const url = `sqlite:${join(temp.dir, 'state.db')}`;
const tenant = 'acme';
let store: StateStore;
let session: Session;

function env(): Record<string, string> {
  const clean: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !key.startsWith('AGENTSTATE_')) clean[key] = value;
  }
  return clean;
}

function start(...args: string[]) {
  return connectStdio(process.execPath, [BUILT_MAIN, 'mcp', '--store', url, ...args], env(), temp.dir);
}

beforeAll(async () => {
  store = await openStore(url);
  session = await store.createSession({ tenant_id: tenant, user_id: 'ada' }, { agent: 'concierge' });
  await store.appendMessages({ tenant_id: tenant }, session.id, [
    { role: 'user', content: 'hello from ada' },
  ]);
  await store.putMemory(
    { tenant_id: tenant, user_id: 'bob' },
    { namespace: 'facts', key: 'pin', value: 1234 },
  );
});

afterAll(async () => {
  await store.close();
  temp.cleanup();
});

describe('agentstate mcp (stdio)', () => {
  it('serves one user: its memory, sessions and context, never another user', async () => {
    const { client, transport, stderr } = await start('--tenant', tenant, '--user', 'ada');
    try {
      expect(client.getServerVersion()?.name).toBe('agentstate');
      expect(client.getInstructions()).toContain('user ada of tenant acme');
      const put = await ok<{ item: MemoryItem }>(client, 'memory_put', {
        namespace: 'preferences',
        key: 'meal',
        value: 'vegetarian',
      });
      expect(put.item).toMatchObject({ tenant_id: tenant, user_id: 'ada' });
      // Written to the file: another process reads it.
      expect(
        (await store.getMemory({ tenant_id: tenant, user_id: 'ada' }, 'preferences', 'meal'))?.value,
      ).toBe('vegetarian');

      expect(await refused(client, 'memory_get', { namespace: 'facts', key: 'pin', user_id: 'bob' })).toMatch(
        /^invalid_request: user_id differs/,
      );
      expect(await ok(client, 'memory_get', { namespace: 'facts', key: 'pin' })).toEqual({ item: null });

      const listed = await ok<{ items: Session[] }>(client, 'sessions_list', {});
      expect(listed.items.map((s) => s.id)).toEqual([session.id]);
      const resources = (await client.listResources()).resources.map((r) => r.uri);
      expect(resources).toEqual([`agentstate://sessions/${session.id}/context`]);
      const read = await client.readResource({ uri: `${resources[0]}?max_tokens=200` });
      const context = JSON.parse(resourceText(read)) as { system: string; token_count: number };
      expect(context.system).toContain('preferences.meal: vegetarian');
      expect(context.token_count).toBeLessThanOrEqual(200);

      // Bad input is an answer; the process keeps serving.
      expect(await refused(client, 'messages_list', { session_id: session.id, limit: 0 })).toMatch(
        /at limit/,
      );
      const messages = await ok<{ messages: { content: string }[] }>(client, 'messages_list', {
        session_id: session.id,
      });
      expect(messages.messages.map((m) => m.content)).toEqual(['hello from ada']);
    } finally {
      await client.close();
    }
    expect(transport.pid).toBeNull();
    expect(stderr()).toBe('');
  });

  it('serves a whole tenant without --user: memory tools name the user', async () => {
    const { client } = await start('--tenant', tenant);
    try {
      expect(await refused(client, 'memory_get', { namespace: 'facts', key: 'pin' })).toMatch(
        /^invalid_request: user_id: required/,
      );
      const pin = await ok<{ item: MemoryItem }>(client, 'memory_get', {
        namespace: 'facts',
        key: 'pin',
        user_id: 'bob',
      });
      expect(pin.item.value).toBe(1234);
    } finally {
      await client.close();
    }
    // Another tenant sees nothing of acme's.
    const other = await start('--tenant', 'globex');
    try {
      expect(await ok(other.client, 'sessions_list', {})).toEqual({ items: [], next_cursor: null });
      expect(
        await ok(other.client, 'memory_get', { namespace: 'facts', key: 'pin', user_id: 'bob' }),
      ).toEqual({
        item: null,
      });
    } finally {
      await other.client.close();
    }
  });

  it("is the package's agentstate/mcp, for any transport of the SDK", async () => {
    const { createMcpServer } = await import('agentstate/mcp');
    const server = createMcpServer({ store, access: { tenant_id: tenant, user_id: 'bob' } });
    const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = newClient();
    await client.connect(clientSide);
    try {
      const pin = await ok<{ item: MemoryItem }>(client, 'memory_get', { namespace: 'facts', key: 'pin' });
      expect(pin.item).toMatchObject({ user_id: 'bob', value: 1234 });
    } finally {
      await client.close();
    }
  });

  it('refuses a store file that does not exist, in one sentence on stderr', async () => {
    const missing = `sqlite:${join(temp.dir, 'missing.db')}`;
    const child = spawnBuiltCli(['mcp', '--store', missing, '--user', 'ada'], temp.dir);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/^agentstate: store sqlite:.*missing\.db does not exist/);
    expect(hasStackTrace(stderr)).toBe(false);
    expect(existsSync(join(temp.dir, 'missing.db'))).toBe(false);
  });
});
