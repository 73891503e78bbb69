/**
 * `Idempotency-Key` on every POST. The first request with a key claims it in the store (scoped to the
 * credential's tenant and user) with a hash of method, path and body; its answer is kept for
 * `idempotencyTtlSeconds`. A retry with the same key and body gets that answer again (with the header
 * `Idempotent-Replayed: true`) and changes nothing; the same key with another body, or while the first
 * is still running, answers 409 `conflict`. Answers that a retry should not repeat (409, 429, 5xx) release
 * the key so the client can try again. A claim whose request never finished (the process died) is free
 * again after IN_PROGRESS_TTL_SECONDS rather than after the whole TTL.
 */
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AgentStateError, invalidRequest } from '../core/errors.js';
import { canonicalJson, type JsonValue } from '../core/json.js';
import type { Scope, StateStore } from '../store/types.js';
import { requestKeyScopeOf } from './auth.js';

const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

interface HeldKey {
  readonly scope: Scope;
  readonly key: string;
}

const held = new WeakMap<FastifyRequest, HeldKey>();

/** How long a claimed key waits for its request to finish: far longer than any turn, far shorter than a day. */
export const IN_PROGRESS_TTL_SECONDS = 600;

export function requestHash(method: string, url: string, body: unknown): string {
  const text = body === undefined ? '' : canonicalJson(body as JsonValue);
  return createHash('sha256').update(`${method} ${url}\n${text}`).digest('hex');
}

function shouldKeep(status: number): boolean {
  return status < 500 && status !== 409 && status !== 429;
}

export function registerIdempotency(app: FastifyInstance, store: StateStore, ttlSeconds: number): void {
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
    const inProgress = Math.min(ttlSeconds, IN_PROGRESS_TTL_SECONDS);
    const claim = await store.claimRequestKey(scope, header, hash, ttlSeconds, inProgress);
    switch (claim.state) {
      case 'new':
        held.set(request, { scope, key: header });
        return;
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

  app.addHook('onSend', async (request, reply, payload) => {
    const claim = held.get(request);
    if (claim === undefined) return payload;
    held.delete(request);
    try {
      if (!shouldKeep(reply.statusCode)) {
        await store.releaseRequestKey(claim.scope, claim.key);
        return payload;
      }
      let body: JsonValue = null;
      if (typeof payload === 'string' && payload !== '') body = JSON.parse(payload) as JsonValue;
      await store.completeRequestKey(claim.scope, claim.key, { status: reply.statusCode, body });
    } catch (error) {
      // The answer itself is right; only its record for a retry failed. A retry will then be refused as
      // "in progress" until the key's time to live ends, never run twice.
      request.log.error({ err: error }, 'could not record the Idempotency-Key answer');
    }
    return payload;
  });
}
