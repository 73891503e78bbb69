/**
 * The JSON body parser: fastify's own (which refuses `__proto__` and `constructor.prototype` keys) plus a
 * depth limit, so a body of 100 000 nested arrays is a 400, not a stack overflow in validation.
 */
import type { FastifyInstance } from 'fastify';
import { AgentStateError } from '../core/errors.js';
import { MAX_JSON_DEPTH } from '../core/json.js';

function depthOf(value: unknown): number {
  let max = 0;
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const top = stack.pop() as { value: unknown; depth: number };
    if (top.value === null || typeof top.value !== 'object') continue;
    const depth = top.depth + 1;
    if (depth > max) max = depth;
    if (max > MAX_JSON_DEPTH) return max;
    for (const child of Object.values(top.value)) stack.push({ value: child, depth });
  }
  return max;
}

export function registerJsonBody(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    parse(request, body as string, (error, value) => {
      if (error) {
        done(new AgentStateError('invalid_request', `body: not valid JSON (${error.message})`), undefined);
        return;
      }
      if (depthOf(value) > MAX_JSON_DEPTH) {
        done(
          new AgentStateError('invalid_request', `body: nested deeper than ${MAX_JSON_DEPTH} levels`),
          undefined,
        );
        return;
      }
      done(null, value);
    });
  });
}
