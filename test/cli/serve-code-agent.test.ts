/**
 * `agentstate serve --agents MODULE` serving an agent written as code on the durable kernel: over HTTP, its
 * first turn asks a question (the session waits for its user), the next turn answers it, and the booking it
 * makes at the demo airline is a recorded action of the session.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AirlineService, startAirlineService } from '../../src/demo/index.js';
import { type ServeChild, startServe } from '../http/serve-child.js';
import { tempDir } from './run.js';

const tmp = tempDir();
const MODULE = join(dirname(fileURLToPath(import.meta.url)), '../runtime/trip-agent.ts');
let airline: AirlineService;
let served: ServeChild;
let url = '';

// biome-ignore lint/suspicious/noExplicitAny: answers are read field by field, as JSON
async function post(path: string, body: unknown): Promise<{ status: number; json: any }> {
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: await response.json() };
}

beforeAll(async () => {
  airline = await startAirlineService({ dataDir: join(tmp.dir, 'airline') });
  served = await startServe({
    store: `sqlite:${tmp.dir}/code.db`,
    cwd: tmp.dir,
    args: ['--agents', MODULE],
    env: { AGENTSTATE_AIRLINE_URL: airline.url },
  });
  url = served.url;
}, 120_000);

afterAll(async () => {
  await served.stop();
  await airline.close();
  tmp.cleanup();
});

describe('serve --agents with an agent of code', { timeout: 60_000 }, () => {
  it('runs its turns over HTTP: a question, the answer next turn, a recorded booking', async () => {
    const made = await post('/v1/sessions', { agent: 'trip_code' });
    expect(made.status).toBe(201);
    const id = made.json.id as string;
    const first = await post(`/v1/sessions/${id}/turns`, { input: 'Fly me from BJS to SHA on 2027-05-05' });
    expect(first.status).toBe(200);
    expect(first.json.reply).toBe('Who is flying?');
    expect(first.json.session.status).toBe('waiting_for_user');
    expect(first.json.tasks[0]).toMatchObject({ type: 'trip_code', state: 'EXECUTING' });

    const second = await post(`/v1/sessions/${id}/turns`, { input: 'Ada Lovelace' });
    expect(second.status).toBe(200);
    expect(second.json.reply).toMatch(/^Booked BJS to SHA for Ada Lovelace: bk_\w+\.$/);
    expect(second.json.session.status).toBe('active');
    expect(second.json.tasks[0]).toMatchObject({ type: 'trip_code', state: 'DONE' });
    expect(second.json.actions).toHaveLength(1);
    expect(second.json.actions[0]).toMatchObject({ tool: 'airline.book', status: 'SUCCESS' });
  });
});
