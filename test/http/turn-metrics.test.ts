/**
 * A server given metrics counts and times the turns it runs (agentstate_turns_total and
 * agentstate_turn_duration_seconds, by agent and outcome), as seen on its own `GET /metrics`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LinkedRuntime, linkRuntime } from '../../src/cli/commands/runtime-link.js';
import { AgentStateError } from '../../src/core/errors.js';
import type { Session } from '../../src/core/model.js';
import type { ZodApp } from '../../src/http/deps.js';
import { createServer } from '../../src/http/server.js';
import { meteredTurns } from '../../src/http/turn-metrics.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { resolveConfig } from '../../src/server/config.js';
import type { TurnResponse, TurnRunner } from '../../src/server/turn-runner.js';
import { openStore } from '../../src/store/open.js';
import type { StateStore } from '../../src/store/types.js';

let app: ZodApp;
let url: string;
let store: StateStore;
let runtime: LinkedRuntime;
const dataDir = mkdtempSync(join(tmpdir(), 'agentstate-turn-metrics-'));

beforeAll(async () => {
  store = await openStore('memory:');
  runtime = await linkRuntime(dataDir);
  app = await createServer({
    store,
    config: resolveConfig({}),
    logger: false,
    inspector: false,
    agents: runtime.setup,
    metrics: createMetrics({ processMetrics: false }),
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await app.close();
  await runtime.close();
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function post<T>(path: string, body: unknown): Promise<T> {
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(response.status).toBeLessThan(300);
  return (await response.json()) as T;
}

describe('turn metrics', () => {
  it('counts and times each turn by agent, model and outcome', async () => {
    const session = await post<Session>('/v1/sessions', { agent: 'flight_booking' });
    await post(`/v1/sessions/${session.id}/turns`, { input: 'I want to book a flight from Paris to Lisbon' });
    await post(`/v1/sessions/${session.id}/turns`, { input: 'on 2027-03-05' });
    const text = await (await fetch(`${url}/metrics`)).text();
    expect(text).toContain('agentstate_turns_total{agent="flight_booking",model="rules",outcome="ok"} 2');
    expect(text).toContain(
      'agentstate_turn_duration_seconds_count{agent="flight_booking",model="rules",outcome="ok"} 2',
    );
    const sum =
      /agentstate_turn_duration_seconds_sum\{agent="flight_booking",model="rules",outcome="ok"\} (\S+)/.exec(
        text,
      );
    expect(Number(sum?.[1])).toBeGreaterThan(0);
  });
});

describe('turn metrics of a turn asked for by session id alone (a user token)', () => {
  it('take the agent from the answer, or after a failure from the session, or say unknown', async () => {
    const metrics = createMetrics({ processMetrics: false });
    const scope = { tenant_id: 'metrics-tenant', user_id: 'metrics-user' };
    const session = await store.createSession(scope, { agent: 'flight_booking' });
    const failing: TurnRunner = {
      runTurn: async () => {
        throw new AgentStateError('conflict', 'busy');
      },
      resume: async () => {
        throw new AgentStateError('conflict', 'busy');
      },
      checkpoints: async () => ({ items: [], next_cursor: null }),
    };
    const metered = meteredTurns(failing, metrics, store);
    await expect(metered.runTurn(scope, { id: session.id }, 'hi')).rejects.toThrow('busy');
    await expect(metered.runTurn(scope, { id: 'sess_00000000000000000000000000' }, 'hi')).rejects.toThrow();
    const answering: TurnRunner = {
      ...failing,
      runTurn: async () => ({ session: { ...session, agent: 'deploy_pipeline' } }) as unknown as TurnResponse,
    };
    await meteredTurns(answering, metrics, store).runTurn(scope, { id: session.id }, 'hi');
    const text = await metrics.registry.metrics();
    expect(text).toContain(
      'agentstate_turns_total{agent="flight_booking",model="unknown",outcome="conflict"} 1',
    );
    expect(text).toContain('agentstate_turns_total{agent="unknown",model="unknown",outcome="conflict"} 1');
    expect(text).toContain('agentstate_turns_total{agent="deploy_pipeline",model="unknown",outcome="ok"} 1');
  });
});
