/**
 * A turn answered as Server-Sent Events: the run starts, and once it has an id its events are followed
 * from its first (run-stream.ts) to its final event. A turn refused before its run starts (a session not
 * found, another turn of the session running) answers its error as JSON, as without the stream. The
 * client leaving ends the stream, not the run: it goes on and its events can be followed again.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { JsonValue } from '../../core/json.js';
import type { SessionRef, TurnCallOptions, TurnRunner } from '../../server/turn-runner.js';
import type { Scope, StateStore } from '../../store/types.js';
import { answerLater } from '../idempotency.js';
import { sendRunEvents } from '../run-stream.js';

export interface StreamedTurn {
  readonly store: StateStore;
  readonly runner: TurnRunner;
  readonly scope: Scope;
  readonly session: SessionRef;
  readonly input: string;
  readonly call: TurnCallOptions;
  readonly request: FastifyRequest;
  readonly reply: FastifyReply;
}

export async function streamTurn(turn: StreamedTurn): Promise<FastifyReply> {
  const { store, runner, scope, session, input, call, request, reply } = turn;
  let started: (runId: string) => void = () => undefined;
  const runStarts = new Promise<string>((resolve) => {
    started = resolve;
  });
  const run = runner.runTurn(scope, session, input, { ...call, onRun: (runId) => started(runId) });
  run.catch((error: unknown) => request.log.info({ err: error }, 'a streamed turn ended with an error'));
  answerLater(
    request,
    run.then((body) => ({ status: 200, body: body as unknown as JsonValue })),
  );
  // The run's id, or the error of a turn refused before its run started.
  // (A runner that never tells the run's id: the answer names it, and the stream replays the whole run.)
  const runId = await Promise.race([
    runStarts,
    run.then((answer) => (typeof answer.run_id === 'string' ? answer.run_id : runStarts)),
  ]);
  return sendRunEvents(request, reply, {
    store,
    scope,
    sessionId: session.id,
    runId,
    after: null,
    settled: run,
  });
}
