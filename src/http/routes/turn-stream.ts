/**
 * A turn answered as Server-Sent Events: the run starts, and once it has an id its events are followed
 * from its first (run-stream.ts) to its final event. A turn refused before its run starts (a session not
 * found, another turn of the session running) answers its error as JSON, as without the stream. The
 * client leaving ends the stream, not the run: it goes on and its events can be followed again.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { JsonValue } from '../../core/json.js';
import type { SessionRef, TurnRunner } from '../../server/turn-runner.js';
import type { Scope, StateStore } from '../../store/types.js';
import { answerLater } from '../idempotency.js';
import { sendRunEvents } from '../run-stream.js';

export interface StreamedTurn {
  readonly store: StateStore;
  readonly runner: TurnRunner;
  readonly scope: Scope;
  readonly session: SessionRef;
  readonly input: string;
  readonly request: FastifyRequest;
  readonly reply: FastifyReply;
}

export async function streamTurn(turn: StreamedTurn): Promise<FastifyReply> {
  const { store, runner, scope, session, input, request, reply } = turn;
  let started: (runId: string) => void = () => undefined;
  const runStarts = new Promise<string>((resolve) => {
    started = resolve;
  });
  const run = runner.runTurn(scope, session, input, { onRun: (runId) => started(runId) });
  run.catch((error: unknown) => request.log.info({ err: error }, 'a streamed turn ended with an error'));
  answerLater(
    request,
    run.then((body) => ({ status: 200, body: body as unknown as JsonValue })),
  );
  // The run's id, or the error of a turn refused before its run started.
  const runId = await Promise.race([runStarts, run.then(() => runStarts)]);
  return sendRunEvents(request, reply, {
    store,
    scope,
    sessionId: session.id,
    runId,
    after: null,
    settled: run,
  });
}
