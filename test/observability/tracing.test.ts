/**
 * Traces end to end: `agentstate serve` (built, a real child process) exports OTLP/HTTP JSON to a receiver
 * this test runs. A flight booking gives the request, turn, run, model, action, checkpoint and store spans,
 * parented as they run, under the traceparent the client sent (which reaches the demo airline and the log
 * lines); a deploy killed by SIGKILL inside a tool call and resumed by a second server links its resumed run
 * and its recovered action to the killed attempt. Without OTEL_* no SDK module is loaded.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  listening,
  loadHook,
  type ReceivedSpan,
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

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agentstate-tracing-'));
  receiver = await startReceiver();
});
afterAll(async () => {
  for (const served of running) if (served.child.exitCode === null) served.child.kill('SIGKILL');
  await Promise.all(running.map((s) => s.exited));
  await receiver?.close();
  rmSync(dir, { recursive: true, force: true });
});

function start(name: string, otel: boolean, log = join(dir, `${name}.loaded`)): Promise<Served> {
  const dataDir = join(dir, 'data');
  const env: Record<string, string> = {};
  if (otel) {
    Object.assign(env, {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'agentstate-under-test',
      OTEL_TRACES_SAMPLER: 'always_on',
      OTEL_BSP_SCHEDULE_DELAY: '50',
      OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '1',
    });
  }
  const args = ['--host', '127.0.0.1', '--port', '0', '--store', `sqlite:${join(dir, 'state.db')}`];
  const served = serve([...args, '--data-dir', dataDir], dir, env, hookFor(log));
  running.push(served);
  return listening(served);
}

/** The hook, noting loaded SDK modules in `log`. */
function hookFor(log: string): string {
  return loadHook(mkdtempSync(join(dir, 'hook-')), log);
}

const named = (name: string) => receiver.spans.filter((s) => s.name === name);
const byId = (id: string) => receiver.spans.find((s) => s.spanId === id);
const inTrace = (traceId: string) => receiver.spans.filter((s) => s.traceId === traceId);
/** The chain of parents of `span` among the received spans. */
function ancestors(span: ReceivedSpan): ReceivedSpan[] {
  const chain: ReceivedSpan[] = [];
  for (let at = byId(span.parentSpanId); at !== undefined; at = byId(at.parentSpanId)) chain.push(at);
  return chain;
}

describe('OpenTelemetry traces of agentstate serve', () => {
  let server: Served;

  it('a flight booking: request, turn, run, model, action, checkpoint and store spans, under the caller’s trace', async () => {
    server = await start('first', true);
    expect(readFileSync(join(dir, 'first.loaded'), 'utf8')).toContain('@opentelemetry/sdk-node');
    const user = `u${hex(4)}`;
    const made = await call<{ id: string }>(server.url, 'POST', '/v1/sessions', {
      user_id: user,
      agent: 'flight_booking',
    });
    expect(made.status).toBe(201);
    const inputs = ['I need a flight from Beijing to Shanghai', 'next Wednesday', 'business class'];
    inputs.push('my name is Ada Lovelace', 'yes');
    const traceId = hex(16);
    for (const [i, input] of inputs.entries()) {
      const last = i === inputs.length - 1;
      const headers = last ? { traceparent: `00-${traceId}-${hex(8)}-01` } : undefined;
      const turn = await call<{ reply: string }>(
        server.url,
        'POST',
        `/v1/sessions/${made.body.id}/turns`,
        { input },
        headers,
      );
      expect(turn.status).toBe(200);
    }
    await until('the booking turn’s spans', () =>
      inTrace(traceId).some((s) => s.name === 'agentstate.action airline.book'),
    );
    await until('the turn span', () => inTrace(traceId).some((s) => s.name === 'agentstate.turn'));
    const spans = inTrace(traceId);
    expect(new Set(spans.map((s) => s.service))).toEqual(new Set(['agentstate-under-test']));
    expect(receiver.contentTypes.has('application/json')).toBe(true);

    const turn = spans.find((s) => s.name === 'agentstate.turn') as ReceivedSpan;
    const request = ancestors(turn).at(-1) as ReceivedSpan;
    expect(request.kind).toBe(2); // SERVER: @fastify/otel's request span, child of the caller's traceparent
    expect(spans.some((s) => s.kind === 2 && s.attributes['http.route'] === '/v1/sessions/:id/turns')).toBe(
      true,
    );
    const run = spans.find((s) => s.name === 'agentstate.run') as ReceivedSpan;
    expect(run.parentSpanId).toBe(turn.spanId);
    expect(run.attributes).toMatchObject({
      'agentstate.session.id': made.body.id,
      'agentstate.agent': 'flight_booking',
      'agentstate.run.resumed': false,
    });
    expect(run.attributes['agentstate.task.types']).toEqual(['flight_booking']);

    const models = spans.filter((s) => s.name === 'chat rules');
    expect(models.length).toBeGreaterThanOrEqual(2);
    for (const model of models) {
      expect(model.parentSpanId).toBe(run.spanId);
      expect(model.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.system': 'agentstate.rules',
        'gen_ai.request.model': 'rules',
      });
      expect(JSON.stringify(model.attributes)).not.toContain('Ada');
    }
    const action = spans.find((s) => s.name === 'agentstate.action airline.book') as ReceivedSpan;
    expect(action.parentSpanId).toBe(run.spanId);
    expect(action.attributes).toMatchObject({
      'agentstate.action.tool': 'airline.book',
      'agentstate.action.status': 'SUCCESS',
      'agentstate.action.attempt': 1,
      'agentstate.action.recovering': false,
    });
    expect(String(action.attributes['agentstate.action.idempotency_key'])).toMatch(/^task_/);

    const checkpoints = spans.filter((s) => s.name === 'agentstate.checkpoint');
    expect(checkpoints.map((s) => s.attributes['agentstate.checkpoint.label'])).toContain('turn');
    const commit = spans.find(
      (s) => s.name === 'commitTurn sqlite' && byId(s.parentSpanId)?.name === 'agentstate.checkpoint',
    ) as ReceivedSpan;
    expect(commit.kind).toBe(3); // CLIENT
    expect(commit.attributes).toMatchObject({
      'db.system.name': 'sqlite',
      'db.operation.name': 'commitTurn',
    });
    // Operation names only: no value of the turn on a store span.
    for (const store of spans.filter((s) => s.attributes['db.system.name'] !== undefined))
      expect(JSON.stringify(store.attributes)).not.toMatch(/Ada|Shanghai|sess_/);

    // The trace went on to the airline, and the log lines of the request name it.
    expect(server.stderr).toContain(`"trace_id":"${traceId}"`);
    const logged = server.stdout.split('\n').filter((line) => line.includes(`"trace_id":"${traceId}"`));
    expect(logged.length).toBeGreaterThan(0);
    expect(JSON.parse(logged[0] as string).span_id).toMatch(/^[0-9a-f]{16}$/);
  }, 120_000);

  it('a deploy killed inside a tool call and resumed by another server links back to the killed attempt', async () => {
    const user = `u${hex(4)}`;
    const made = await call<{ id: string }>(server.url, 'POST', '/v1/sessions', {
      user_id: user,
      agent: 'deploy_pipeline',
    });
    const effects = join(dir, 'data', 'workspace', 'deploy-effects.jsonl');
    const turn = call(server.url, 'POST', `/v1/sessions/${made.body.id}/turns`, {
      input: 'deploy checkout-api to staging',
    }).catch(() => null);
    await until(
      'the deploy to reach run_tests',
      () =>
        existsSync(effects) && /"kind":"call","tool":"deploy.run_tests"/.test(readFileSync(effects, 'utf8')),
      60_000,
    );
    // Its checkpoint before the call is exported (each span at once): then the server dies inside the call.
    const beforeTests = () =>
      named('agentstate.checkpoint').some(
        (s) => s.attributes['agentstate.checkpoint.label'] === 'before deploy.run_tests (step 3)',
      );
    await until('the checkpoint before run_tests to be exported', beforeTests, 5_000);
    server.child.kill('SIGKILL');
    await server.exited;
    expect(await turn).toBeNull();
    const before = named('agentstate.checkpoint').find(
      (s) => s.attributes['agentstate.checkpoint.label'] === 'before deploy.run_tests (step 3)',
    ) as ReceivedSpan;
    // The begin commit is made in the action's span, a child of the attempt's run span (neither ended, nor
    // exported, in the killed attempt); an earlier step's action span, ended, names that run span.
    const killedAction = before.parentSpanId;
    const killedRun = named('agentstate.action deploy.plan').find((s) => s.traceId === before.traceId)
      ?.parentSpanId as string;
    expect(killedRun).toMatch(/^[0-9a-f]{16}$/);
    expect(killedAction).not.toBe(killedRun);

    server = await start('second', true);
    let resumed = await call<{ resumed?: boolean }>(
      server.url,
      'POST',
      `/v1/sessions/${made.body.id}/resume`,
    );
    const deadline = Date.now() + 20_000;
    while (resumed.status === 409 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250)); // the killed server's lease runs out
      resumed = await call(server.url, 'POST', `/v1/sessions/${made.body.id}/resume`);
    }
    expect(resumed.status).toBe(200);
    await until('the resumed run', () =>
      named('agentstate.run').some((s) => s.attributes['agentstate.run.resumed'] === true),
    );
    const run = named('agentstate.run').find(
      (s) => s.attributes['agentstate.run.resumed'] === true,
    ) as ReceivedSpan;
    expect(run.traceId).not.toBe(before.traceId);
    expect(run.links).toEqual([
      { traceId: before.traceId, spanId: killedRun, attributes: { 'agentstate.link': 'resumes' } },
    ]);
    await until('the recovered action', () =>
      named('agentstate.action deploy.run_tests').some((s) => s.traceId === run.traceId),
    );
    const recovered = named('agentstate.action deploy.run_tests').find(
      (s) => s.traceId === run.traceId,
    ) as ReceivedSpan;
    expect(recovered.parentSpanId).toBe(run.spanId);
    expect(recovered.attributes).toMatchObject({
      'agentstate.action.recovering': true,
      'agentstate.action.status': 'SUCCESS',
    });
    expect(['found', 'not_found']).toContain(recovered.attributes['agentstate.action.lookup']);
    expect(recovered.links).toEqual([
      { traceId: before.traceId, spanId: killedAction, attributes: { 'agentstate.link': 'recorded_by' } },
    ]);
    server.child.kill('SIGTERM');
    await server.exited;
  }, 180_000);

  it('with no OTEL_* variable, serve loads no OpenTelemetry SDK module and sends nothing', async () => {
    const spansBefore = receiver.spans.length;
    const plain = await start('plain', false);
    const made = await call<{ id: string }>(plain.url, 'POST', '/v1/sessions', {
      user_id: `u${hex(4)}`,
      agent: 'flight_booking',
    });
    const turn = await call(plain.url, 'POST', `/v1/sessions/${made.body.id}/turns`, {
      input: 'I need a flight from Beijing to Shanghai',
    });
    expect(turn.status).toBe(200);
    plain.child.kill('SIGTERM');
    await plain.exited;
    expect(existsSync(join(dir, 'plain.loaded'))).toBe(false);
    expect(plain.stdout).not.toContain('"trace_id"');
    expect(receiver.spans.length).toBe(spansBefore);
  }, 60_000);
});
