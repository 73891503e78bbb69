/**
 * The committed types of agentstate/client (src/client/openapi.ts) are what the generator makes of the
 * `/openapi.json` a started server serves: regenerating changes nothing. A changed document does change
 * them, so the comparison can fail.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateTypes, TYPES_FILE } from '../../src/client/generate.js';
import { startTestServer, type TestServer } from '../http/harness.js';

let server: TestServer;
let served: string;

beforeAll(async () => {
  server = await startTestServer();
  const response = await fetch(`${server.url}/openapi.json`);
  expect(response.status).toBe(200);
  served = await response.text();
});
afterAll(async () => {
  await server.close();
});

describe('generated client types', () => {
  it('regenerating from the served /openapi.json changes nothing', async () => {
    const committed = readFileSync(TYPES_FILE, 'utf8');
    const generated = await generateTypes(served);
    expect(generated, 'src/client/openapi.ts is out of date: run npm run client:generate').toBe(committed);
  });

  it('a route the document gains shows in the types', async () => {
    const document = JSON.parse(served) as { paths: Record<string, unknown> };
    const sessions = document.paths['/v1/sessions'];
    document.paths['/v1/sessions-copy'] = sessions;
    const generated = await generateTypes(JSON.stringify(document));
    expect(generated).not.toBe(readFileSync(TYPES_FILE, 'utf8'));
    expect(generated).toContain("'/v1/sessions-copy'");
  });
});
