/**
 * `Idempotency-Key` on every POST. The first request with a key claims it in the store (scoped to the
 * credential's tenant and user) with a hash of method, path and body; its answer is kept for
 * `idempotencyTtlSeconds`. A retry with the same key and body gets that answer again (with the header
 * `Idempotent-Replayed: true`) and changes nothing; the same key with another body, or while the first
 * is still running, answers 409 `conflict`. Answers that a retry should not repeat (409, 429, 5xx) release
 * the key so the client can try again.
 *
 * While a request runs, its key is marked in progress for IN_PROGRESS_TTL_SECONDS only, and the server
 * holding the claim renews the mark every third of that time until the request is answered (for a reply
 * the handler streams or hijacks, until the response has ended). The mark lives as long as its holder
 * renews it: a slow request keeps its key however long it runs, and when the holder dies (the process
 * crashed) a retry waits at most IN_PROGRESS_TTL_SECONDS before it runs the request, never the whole TTL.
 */
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AgentStateError, invalidRequest } from '../core/errors.js';
import { canonicalJson, type JsonValue } from '../core/json.js';
import type { Scope, StateStore } from '../store/types.js';
import { requestKeyScopeOf } from './auth.js';
import { errorBody, statusOf, toAgentStateError } from './errors.js';

const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/** A claim this server holds for a request being handled, renewed until it is recorded or released. */
interface HeldKey {
  readonly scope: Scope;
  readonly key: string;
  readonly hash: string;
  /** The renewal timer; null once stopped. */
  timer: NodeJS.Timeout | null;
  /** The renewal under way, if any: a recording waits for it, so the two never race on the key. */
  renewing: Promise<void> | null;
  /** The answer is a stream: it is recorded (and the claim renewed) until the response has ended. */
  streamed: boolean;
  /** A renewal found the key no longer ours (it lapsed, and may be another request's now). */
  lost: boolean;
}

const held = new WeakMap<FastifyRequest, HeldKey>();

/**
 * How long an in-progress mark lasts without a renewal: as long as a run's session lease
 * (DEFAULT_LEASE_TTL_MS, 10 s), so a retry after a crash is served once the dead server's claims lapse.
 */
export const IN_PROGRESS_TTL_SECONDS = 10;

const answers = new WeakMap<FastifyRequest, Promise<{ status: number; body: JsonValue }>>();

/**
 * The answer a retry of this request gets, when its response is a stream that does not hold it whole (a
 * streamed turn: the run's final answer). Recorded once it settles (an error: as the error answer).
 */
export function answerLater(
  request: FastifyRequest,
  answer: Promise<{ status: number; body: JsonValue }>,
): void {
  answer.catch(() => undefined);
  answers.set(request, answer);
}

export function requestHash(method: string, url: string, body: unknown): string {
  const text = body === undefined ? '' : canonicalJson(body as JsonValue);
  return createHash('sha256').update(`${method} ${url}\n${text}`).digest('hex');
}

function shouldKeep(status: number): boolean {
  return status < 500 && status !== 409 && status !== 429;
}

/** A body sent piece by piece (Server-Sent Events, a file): its response ends after onSend. */
function isStream(payload: unknown): boolean {
  if (typeof payload !== 'object' || payload === null) return false;
  const body = payload as { pipe?: unknown; getReader?: unknown };
  return typeof body.pipe === 'function' || typeof body.getReader === 'function';
}

/** Stops renewing; resolves once a renewal under way has ended. */
function stopRenewing(claim: HeldKey): Promise<void> {
  if (claim.timer !== null) clearInterval(claim.timer);
  claim.timer = null;
  return claim.renewing ?? Promise.resolve();
}

export function registerIdempotency(app: FastifyInstance, store: StateStore, ttlSeconds: number): void {
  const inProgress = Math.min(ttlSeconds, IN_PROGRESS_TTL_SECONDS);
  const every = Math.max(1, Math.floor((inProgress * 1000) / 3));

  /** Renews the claim every third of its in-progress TTL, until stopped or lost. */
  const startRenewing = (request: FastifyRequest, claim: HeldKey): void => {
    const renew = async () => {
      try {
        if (await store.renewRequestKey(claim.scope, claim.key, claim.hash, inProgress)) return;
        request.log.warn(
          { idempotencyKey: claim.key },
          'lost the Idempotency-Key claim of a request still running: it is no longer renewed',
        );
        claim.lost = true;
        void stopRenewing(claim);
      } catch (error) {
        // The store is unreachable for now: the next tick tries again, while the mark still lives.
        request.log.warn({ err: error }, 'could not renew the Idempotency-Key claim');
      }
    };
    claim.timer = setInterval(() => {
      if (claim.renewing !== null) return;
      claim.renewing = renew().finally(() => {
        claim.renewing = null;
      });
    }, every);
    claim.timer.unref();
  };

  /** Keeps the answer for a retry, or frees the key for one; the claim stops being renewed first. */
  const record = async (request: FastifyRequest, status: number, body: () => JsonValue): Promise<void> => {
    const claim = held.get(request);
    if (claim === undefined) return;
    held.delete(request);
    try {
      await stopRenewing(claim);
      // A lost claim is no longer ours to record or free: it may be another request's by now.
      if (claim.lost) return;
      if (!shouldKeep(status)) {
        await store.releaseRequestKey(claim.scope, claim.key);
        return;
      }
      await store.completeRequestKey(claim.scope, claim.key, { status, body: body() });
    } catch (error) {
      // The answer itself is right; only its record for a retry failed. A retry will then be refused as
      // "in progress" until the mark, no longer renewed, lapses (IN_PROGRESS_TTL_SECONDS).
      request.log.error({ err: error }, 'could not record the Idempotency-Key answer');
    }
  };

  app.addHook('preHandler', async (request: FastifyRequest, reply: FastifyReply) => {
    // Public routes have no principal, and no POST routes.
    if (request.method !== 'POST' || request.principal === null) return;
    const header = request.headers['idempotency-key'];
    if (header === undefined) return;
    if (typeof header !== 'string' || !KEY_PATTERN.test(header)) {
      throw invalidRequest('Idempotency-Key: must be 1-255 printable ASCII characters', {
        field: 'Idempotency-Key',
      });
    }
    const scope = requestKeyScopeOf(request.principal);
    const hash = requestHash(request.method, request.url, request.body);
    const claim = await store.claimRequestKey(scope, header, hash, ttlSeconds, inProgress);
    switch (claim.state) {
      case 'new': {
        const holding: HeldKey = {
          scope,
          key: header,
          hash,
          timer: null,
          renewing: null,
          streamed: false,
          lost: false,
        };
        held.set(request, holding);
        startRenewing(request, holding);
        // A streamed answer, and a reply that never passes onSend (the handler hijacked it, or wrote the raw
        // response itself), are recorded once the response has ended (finished, or cut by the client), and
        // renewed until then. Otherwise a client that leaves early ends nothing here: the handler still
        // runs, and onSend records its answer when it is done.
        let recording = false;
        const ended = () => {
          if (recording || held.get(request) !== holding || (!holding.streamed && !reply.sent)) return;
          // 'finish' and then 'close' both come: the first one records.
          recording = true;
          // A streamed turn's answer is its run's: kept (and the claim renewed) until the run is over, even
          // when the client left before, so a retry gets the answer rather than an empty stream.
          const later = answers.get(request);
          if (later !== undefined) {
            answers.delete(request);
            void later.then(
              (answer) => record(request, answer.status, () => answer.body),
              (error: unknown) => {
                const failure = toAgentStateError(error);
                return record(request, statusOf(failure), () => errorBody(failure) as unknown as JsonValue);
              },
            );
            return;
          }
          const raw = reply.raw;
          void record(request, raw.headersSent ? raw.statusCode : 500, () => null);
        };
        reply.raw.once('finish', ended);
        reply.raw.once('close', ended);
        return;
      }
      case 'done':
        void reply.header('idempotent-replayed', 'true');
        return reply.status(claim.response.status).send(claim.response.body ?? undefined);
      case 'in_progress':
        throw new AgentStateError(
          'conflict',
          'a request with this Idempotency-Key is still in progress; retry later',
          {
            details: { field: 'Idempotency-Key' },
          },
        );
      case 'mismatch':
        throw new AgentStateError(
          'conflict',
          'this Idempotency-Key was already used with a different request',
          {
            details: { field: 'Idempotency-Key' },
          },
        );
    }
  });

  // onSend runs for every answer that goes through the reply: the handler's error, and an answer sent after
  // the client left, included.
  app.addHook('onSend', async (request, reply, payload) => {
    const claim = held.get(request);
    if (claim === undefined) return payload;
    if (isStream(payload)) {
      claim.streamed = true;
      return payload;
    }
    await record(request, reply.statusCode, () =>
      typeof payload === 'string' && payload !== '' ? (JSON.parse(payload) as JsonValue) : null,
    );
    return payload;
  });
}
