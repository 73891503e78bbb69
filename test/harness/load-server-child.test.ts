import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startServerChild } from '../../src/harness/load/server-child.js';
import { SERVER_NODE_FLAGS } from '../../src/http/heap-policy.js';

const dir = mkdtempSync(join(tmpdir(), 'load-server-child-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the load harness server', () => {
  it('runs with the server heap policy (no memory reducer) and answers with its key', async () => {
    const server = await startServerChild({
      storeUrl: `sqlite:${join(dir, 'server.db')}`,
      dataDir: join(dir, 'data'),
      turnThreads: 1,
    });
    try {
      const argv = readFileSync(`/proc/${server.pid}/cmdline`, 'utf8').split('\0');
      expect(SERVER_NODE_FLAGS).toContain('--no-memory-reducer');
      for (const flag of SERVER_NODE_FLAGS) expect(argv).toContain(flag);
      expect(argv.indexOf('--no-memory-reducer')).toBeLessThan(argv.indexOf('serve'));
      expect(server.turnThreads).toBe(1);
      const ready = await fetch(`${server.url}/readyz`);
      expect(ready.status).toBe(200);
      const denied = await fetch(`${server.url}/v1/sessions`);
      expect(denied.status).toBe(401);
      const listed = await fetch(`${server.url}/v1/sessions`, {
        headers: { authorization: `Bearer ${server.apiKey}` },
      });
      expect(listed.status).toBe(200);
    } finally {
      await server.close();
    }
  });
});
