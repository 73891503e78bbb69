/**
 * Starting rules (keys need a secret; no keys only on loopback), loopback mode, rate limiting per token,
 * health, readiness, the OpenAPI document and its UI.
 */

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Session } from '../../src/core/model.js';
import { createServer } from '../../src/http/server.js';
import { loadConfig, parseApiKeys, resolveConfig } from '../../src/server/config.js';
import { openStore } from '../../src/store/open.js';
import { call, rand, startTestServer } from './harness.js';

describe('starting', () => {
  it('refuses API keys without a JWT secret', async () => {
    const store = await openStore('memory:');
    await expect(
      createServer({ store, logger: false, config: { apiKeys: { 'a-key-of-sixteen-chars': 't1' } } }),
    ).rejects.toThrow(/JWT secret/);
    await store.close();
  });

  it('refuses to serve without keys off loopback', async () => {
    const store = await openStore('memory:');
    await expect(createServer({ store, logger: false, config: { host: '0.0.0.0' } })).rejects.toThrow(
      /without API keys/,
    );
    await store.close();
  });

  it('reads keys and secret from the environment, and refuses a malformed key list', () => {
    const config = loadConfig({
      AGENTSTATE_API_KEYS: 'acme:acme-key-0123456789abcdef, globex:globex-key-0123456789abc',
      AGENTSTATE_JWT_SECRET: 's'.repeat(32),
    });
    expect([...config.apiKeys.values()].sort()).toEqual(['acme', 'globex']);
    expect(config.limits.bodyLimitBytes).toBe(1024 * 1024);
    expect(() => parseApiKeys('acme')).toThrow(/tenant:key/);
    expect(() => resolveConfig({ apiKeys: { short: 'acme' }, jwtSecret: 's'.repeat(32) })).toThrow(/16/);
    expect(() => resolveConfig({ limits: { maxMessageChars: 0 } })).toThrow(/maxMessageChars/);
  });

  it('refuses a config file of the wrong shape and a bad AGENTSTATE_PORT, naming what is wrong', () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentstate-config-'));
    const file = (name: string, text: string) => {
      writeFileSync(join(dir, name), text);
      return join(dir, name);
    };
    try {
      const cases: [string, RegExp][] = [
        ['[]', /the file: /],
        ['{"apiKeys":"acme:short"}', /apiKeys: /],
        ['{"port":"8080"}', /port: /],
        ['{"limits":{"bodyLimit":5}}', /limits: .*bodyLimit/],
        ['{"apikeys":{}}', /apikeys/],
      ];
      for (const [text, names] of cases) {
        expect(() => loadConfig({}, file('c.json', text)), text).toThrow(names);
      }
      const good = loadConfig(
        {},
        file(
          'good.json',
          `{"port":9000,"apiKeys":{"a-key-of-sixteen-chars":"acme"},"jwtSecret":"${'s'.repeat(32)}"}`,
        ),
      );
      expect([good.port, [...good.apiKeys.values()]]).toEqual([9000, ['acme']]);
      for (const port of ['abc', '-5', '99999', '80.5', ' '])
        expect(() => loadConfig({ AGENTSTATE_PORT: port }), port).toThrow(
          /AGENTSTATE_PORT must be a port number/,
        );
      expect(loadConfig({ AGENTSTATE_PORT: '8080' }).port).toBe(8080);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('loopback mode (no keys)', () => {
  it('accepts unauthenticated requests as tenant default, user from the body or default', async () => {
    const store = await openStore('memory:');
    const app = await createServer({ store, logger: false });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    try {
      const user = rand('u');
      const made = await call<Session>(url, 'POST', '/v1/sessions', { body: { user_id: user } });
      expect(made.status).toBe(201);
      expect([made.body.tenant_id, made.body.user_id]).toEqual(['default', user]);
      const anon = await call<Session>(url, 'POST', '/v1/sessions', { body: {} });
      expect(anon.body.user_id).toBe('default');
      expect((await call(url, 'GET', `/v1/sessions/${made.body.id}`)).status).toBe(200);
      const bad = await call(url, 'GET', `/v1/sessions/${made.body.id}`, { token: 'whatever-token' });
      expect(bad.status).toBe(401);
      const mint = await call(url, 'POST', '/v1/tokens', { body: { user_id: user } });
      expect(mint.status).toBe(401);
    } finally {
      await app.close();
      await store.close();
    }
  });

  it('says so in its log when it starts', async () => {
    const store = await openStore('memory:');
    const { default: pino } = await import('pino');
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });
    const app = await createServer({ store, logger });
    await app.close();
    await store.close();
    expect(lines.join('')).toContain('no API keys configured');
  });
});

function rawGet(base: string, path: string): Promise<{ status: number; body: string }> {
  const { port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: Number(port), path, method: 'GET' }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => {
        body += c.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('public routes', () => {
  it('are decided by the matched route, so no path trick reaches a protected route without a token', async () => {
    const server = await startTestServer();
    try {
      const made = await call<Session>(server.url, 'POST', '/v1/sessions', {
        token: server.keyA,
        body: { user_id: 'u1' },
      });
      expect(made.status).toBe(201);
      for (const path of [
        '/docs/../v1/sessions',
        '/healthz/../v1/sessions',
        '/metrics/../v1/sessions',
        '/docs/%2e%2e/v1/sessions',
        '/v1/sessions?x=/healthz',
        '/healthz;/v1/sessions',
      ]) {
        const reply = await rawGet(server.url, path);
        expect(reply.status, path).not.toBe(200);
        expect(reply.body, path).not.toContain(made.body.id);
      }
    } finally {
      await server.close();
    }
  });
});

describe('without the runtime', () => {
  it('turns, checkpoints and resume answer 501 not_implemented (after the session check)', async () => {
    const server = await startTestServer();
    try {
      const token = server.tokens.alice;
      const made = await call<Session>(server.url, 'POST', '/v1/sessions', { token, body: {} });
      const base = `/v1/sessions/${made.body.id}`;
      const replies = [
        await call(server.url, 'POST', `${base}/turns`, { token, body: { input: 'hi' } }),
        await call(server.url, 'GET', `${base}/checkpoints`, { token }),
        await call(server.url, 'POST', `${base}/resume`, { token, body: {} }),
      ];
      expect(replies.map((r) => [r.status, r.body.error.code])).toEqual([
        [501, 'not_implemented'],
        [501, 'not_implemented'],
        [501, 'not_implemented'],
      ]);
      const other = await call(server.url, 'POST', `${base}/turns`, {
        token: server.tokens.bob,
        body: { input: 'hi' },
      });
      expect(other.status).toBe(404);
    } finally {
      await server.close();
    }
  });
});

describe('metrics', () => {
  it('serves Prometheus text at /metrics and counts requests by route pattern', async () => {
    const { createMetrics } = await import('../../src/observability/metrics.js');
    const store = await openStore('memory:');
    const app = await createServer({
      store,
      logger: false,
      metrics: createMetrics({ processMetrics: false }),
    });
    try {
      const made = await app.inject({ method: 'POST', url: '/v1/sessions', payload: {} });
      const id = (made.json() as Session).id;
      await app.inject({ method: 'GET', url: `/v1/sessions/${id}` });
      const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
      expect(text).toMatch(/agentstate_http_requests_total\{[^}]*route="\/v1\/sessions\/:id"[^}]*\} 1/);
      expect(text).not.toContain(id);
    } finally {
      await app.close();
      await store.close();
    }
  });
});

describe('rate limiting', () => {
  it('limits each token on its own and answers 429 rate_limited', async () => {
    const server = await startTestServer({ limits: { rateLimitMax: 3, rateLimitWindowMs: 60_000 } });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        statuses.push((await call(server.url, 'GET', '/v1/sessions', { token: server.tokens.alice })).status);
      }
      expect(statuses).toEqual([200, 200, 200, 429, 429]);
      const limited = await call(server.url, 'GET', '/v1/sessions', { token: server.tokens.alice });
      expect(limited.body.error.code).toBe('rate_limited');
      expect(limited.headers.get('retry-after')).not.toBeNull();
      expect((await call(server.url, 'GET', '/v1/sessions', { token: server.tokens.bob })).status).toBe(200);
      expect((await call(server.url, 'GET', '/healthz')).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});

describe('health and documents', () => {
  it('healthz, readyz, openapi.json and docs answer without a token; readyz follows the store', async () => {
    const store = await openStore('memory:');
    const server = await startTestServer({ store });
    try {
      expect((await call(server.url, 'GET', '/healthz')).body).toEqual({ status: 'ok' });
      expect((await call(server.url, 'GET', '/readyz')).body).toEqual({ status: 'ready', store: 'memory' });
      const doc = await call<{ openapi: string; paths: Record<string, Record<string, unknown>> }>(
        server.url,
        'GET',
        '/openapi.json',
      );
      expect(doc.status).toBe(200);
      expect(doc.body.openapi).toBe('3.1.0');
      for (const path of [
        '/v1/sessions',
        '/v1/sessions/{id}',
        '/v1/sessions/{id}/messages',
        '/v1/sessions/{id}/turns',
        '/v1/sessions/{id}/context',
        '/v1/sessions/{id}/checkpoints',
        '/v1/sessions/{id}/resume',
        '/v1/tasks',
        '/v1/tasks/{id}',
        '/v1/tasks/{id}/events',
        '/v1/tasks/{id}/actions',
        '/v1/actions',
        '/v1/actions/{id}',
        '/v1/users/{user_id}/memory/{namespace}/{key}',
        '/v1/users/{user_id}/memory/{namespace}',
        '/v1/tokens',
      ]) {
        expect(doc.body.paths[path], path).toBeDefined();
      }
      // Every $ref names a schema the document holds, and every API operation documents its errors.
      const text = JSON.stringify(doc.body);
      const components = (doc.body as { components?: { schemas?: Record<string, unknown> } }).components;
      const refs = [...text.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map(
        (m) => m[1] as string,
      );
      expect(refs.length).toBeGreaterThan(0);
      for (const ref of new Set(refs)) expect(components?.schemas?.[ref], ref).toBeDefined();
      for (const [path, operations] of Object.entries(doc.body.paths)) {
        if (!path.startsWith('/v1/')) continue;
        for (const [method, operation] of Object.entries(operations)) {
          const responses = (operation as { responses: Record<string, unknown> }).responses;
          expect(Object.keys(responses), `${method} ${path}`).toContain('400');
        }
      }
      const ui = await call(server.url, 'GET', '/docs/');
      expect(ui.status).toBe(200);
      expect(ui.text).toContain('swagger');
      expect(ui.text).not.toMatch(/https?:\/\/(cdn|unpkg)/);
      await store.close();
      const down = await call(server.url, 'GET', '/readyz');
      expect(down.status).toBe(503);
      expect(down.body.error.code).toBe('store_unavailable');
      const closed = await call(server.url, 'GET', '/v1/sessions', { token: server.tokens.alice });
      expect(closed.status).toBe(503);
    } finally {
      await server.close();
    }
  });
});
