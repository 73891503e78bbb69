/**
 * The JSON body parser: fastify's own (which refuses `__proto__` and `constructor.prototype` keys), plus a
 * depth limit (a body of 100 000 nested arrays is a 400, not a stack overflow in validation) and a check for
 * lone surrogates, -0 and numbers JavaScript cannot keep as written (json-numbers.ts), each naming the
 * request's field. An empty body sent as application/json (as many clients
 * do for DELETE) is no body: the route's schema decides whether it needs one.
 */
import type { FastifyInstance } from 'fastify';
import { AgentStateError } from '../core/errors.js';
import { childPath, MAX_JSON_DEPTH, wellFormed } from '../core/json.js';
import { lossyNumberOf } from './json-numbers.js';

/**
 * What no route can take, found in one walk: nesting deeper than MAX_JSON_DEPTH (a body of 100 000 nested
 * arrays would overflow the stack in validation) or a string or key holding a lone UTF-16 surrogate
 * (`"\ud800"` is valid JSON but not text: the store would refuse it later, naming its own field, not the
 * request's), or -0 (which JSON storage would keep as 0). Null when the body is fine.
 */
function refusalOf(value: unknown): string | null {
  const stack: { value: unknown; depth: number; path: string }[] = [{ value, depth: 0, path: 'body' }];
  while (stack.length > 0) {
    const top = stack.pop() as { value: unknown; depth: number; path: string };
    if (typeof top.value === 'string') {
      if (!wellFormed(top.value))
        return `${top.path}: holds a lone UTF-16 surrogate, which is not valid text`;
      continue;
    }
    if (Object.is(top.value, -0)) return `${top.path}: -0 is not representable in JSON; use 0`;
    if (top.value === null || typeof top.value !== 'object') continue;
    const depth = top.depth + 1;
    if (depth > MAX_JSON_DEPTH) return `body: nested deeper than ${MAX_JSON_DEPTH} levels`;
    if (Array.isArray(top.value)) {
      top.value.forEach((child, i) => {
        stack.push({ value: child, depth, path: childPath(top.path, i) });
      });
      continue;
    }
    for (const [key, child] of Object.entries(top.value)) {
      if (!wellFormed(key))
        return `${top.path}: a key holds a lone UTF-16 surrogate, which is not valid text`;
      stack.push({ value: child, depth, path: childPath(top.path, key) });
    }
  }
  return null;
}

export function registerJsonBody(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '') {
      done(null, undefined);
      return;
    }
    parse(request, body as string, (error, value) => {
      if (error) {
        done(new AgentStateError('invalid_request', `body: not valid JSON (${error.message})`), undefined);
        return;
      }
      const refusal = refusalOf(value) ?? lossyNumberOf(body as string);
      if (refusal !== null) {
        done(new AgentStateError('invalid_request', refusal), undefined);
        return;
      }
      done(null, value);
    });
  });
  // A compressed body would reach the parser as bytes it cannot read, and a body labelled compressed that is
  // not would be taken as it is: neither is guessed at.
  app.addHook('onRequest', async (request) => {
    const encoding = request.headers['content-encoding'];
    if (encoding === undefined || encoding.trim().toLowerCase() === 'identity') return;
    throw new AgentStateError(
      'invalid_request',
      `content-encoding: ${JSON.stringify(encoding)} is not supported; send the body uncompressed`,
    );
  });
}
