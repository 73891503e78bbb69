/**
 * Exemplars end to end: `agentstate serve` (built, a real child process) exports its traces to a local
 * OTLP/HTTP receiver; a turn sent with a `traceparent` is then found on a real HTTP scrape of `/metrics` asking
 * for OpenMetrics, as the exemplar of the turn latency histogram, with the trace id of the turn span the
 * receiver got. With turns on the main thread and on turn threads (whose metrics are summed with the main
 * thread's, exemplars kept). The same scrape without `Accept` gets the Prometheus text, exemplar-free; a server
 * without OTEL_* variables gives no exemplar at all.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  listening,
  loadHook,
  type Receiver,
  type Served,
  serve,
  startReceiver,
  until,
} from './tracing-otlp.js';

let dir: string;
let receiver: Receiver;
const running: Served[] = [];
const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const OPENMETRICS = 'application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5';
/** A bucket line of the turn latency histogram with an exemplar: its trace id and observed value. */
const EXEMPLAR =
  /^agentstate_turn_duration_seconds_bucket\{[^}]*\} \d+ # \{trace_id="([0-9a-f]{32})"\} ([0-9.e+-]+) [0-9.]+$/gm;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agentstate-exemplars-'));
  receiver = await startReceiver();
});
afterAll(async () => {
  for (const served of running) if (served.child.exitCode === null) served.child.kill('SIGKILL');
  await Promise.all(running.map((s) => s.exited));
  await receiver?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function start(name: string, turnThreads: string, otel: boolean): Promise<Served> {
  const env: Record<string, string> = otel
    ? {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_TRACES_SAMPLER: 'always_on',
        OTEL_BSP_SCHEDULE_DELAY: '50',
      }
    : {};
  const args = ['--host', '127.0.0.1', '--port', '0', '--turn-threads', turnThreads];
  args.push('--store', `sqlite:${join(dir, `${name}.db`)}`, '--data-dir', join(dir, `${name}-data`));
  const hook = loadHook(mkdtempSync(join(dir, 'hook-')), join(dir, `${name}.loaded`));
  const served = serve(args, dir, env, hook);
  running.push(served);
  return listening(served);
}

/** One flight-booking turn under the trace `traceId` (the caller's traceparent). */
async function turnIn(server: Served, traceId: string): Promise<void> {
  const made = await call<{ id: string }>(server.url, 'POST', '/v1/sessions', {
    user_id: `u${hex(4)}`,
    agent: 'flight_booking',
  });
  expect(made.status).toBe(201);
  const turn = await call(
    server.url,
    'POST',
    `/v1/sessions/${made.body.id}/turns`,
    { input: 'I need a flight from Beijing to Shanghai' },
    { traceparent: `00-${traceId}-${hex(8)}-01` },
  );
  expect(turn.status).toBe(200);
}

async function scrape(server: Served, accept?: string) {
  const response = await fetch(`${server.url}/metrics`, accept === undefined ? {} : { headers: { accept } });
  return { type: response.headers.get('content-type') ?? '', text: await response.text() };
}

async function stop(server: Served): Promise<void> {
  server.child.kill('SIGTERM');
  await server.exited;
}

describe('exemplars of the turn latency histogram', () => {
  for (const [mode, turnThreads] of [
    ['turns on the main thread', '0'],
    ['turns on turn threads', '2'],
  ] as const) {
    it(`name the turn's trace in an OpenMetrics scrape (${mode})`, async () => {
      const server = await start(`traced-${turnThreads}`, turnThreads, true);
      const traceId = hex(16);
      await turnIn(server, traceId);

      const open = await scrape(server, OPENMETRICS);
      expect(open.type).toBe('application/openmetrics-text; version=1.0.0; charset=utf-8');
      expect(open.text.endsWith('# EOF\n')).toBe(true);
      expect(open.text).toMatch(/^# TYPE agentstate_turns counter$/m);
      expect(open.text).toMatch(/^agentstate_turns_total\{agent="flight_booking",.*\} 1$/m);
      const exemplars = [...open.text.matchAll(EXEMPLAR)];
      expect(exemplars.map((match) => match[1])).toEqual([traceId]);
      expect(Number(exemplars[0]?.[2])).toBeGreaterThan(0);

      // The trace the exemplar names is the turn's, as the receiver got it.
      await until('the turn span', () =>
        receiver.spans.some((s) => s.traceId === traceId && s.name === 'agentstate.turn'),
      );

      // A scraper that does not ask for OpenMetrics gets the Prometheus text, as before.
      const plain = await scrape(server);
      expect(plain.type).toBe('text/plain; version=0.0.4; charset=utf-8');
      expect(plain.text).toMatch(/^# TYPE agentstate_turns_total counter$/m);
      expect(plain.text).not.toContain('trace_id');
      expect(plain.text).not.toContain('# EOF');
      await stop(server);
    }, 120_000);
  }

  it('are absent without OTEL_* variables', async () => {
    const server = await start('plain', '0', false);
    await turnIn(server, hex(16));
    const open = await scrape(server, OPENMETRICS);
    expect(open.type).toContain('application/openmetrics-text');
    expect(open.text).toMatch(/^agentstate_turn_duration_seconds_count\{agent="flight_booking",.*\} 1$/m);
    expect(open.text).not.toContain('trace_id');
    expect(open.text).not.toMatch(/ # \{/);
    await stop(server);
  }, 60_000);
});
