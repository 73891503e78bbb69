/**
 * The one place where errors become responses: `{"error": {"code", "message", "details"?}}`.
 * AgentStateError codes map to statuses here; fastify's own errors (bad JSON, body too large, schema
 * validation, rate limit) are translated to the same codes first. Anything else is a 500 `internal` whose
 * message reveals nothing; the log keeps the cause.
 */
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AgentStateError, type ErrorCode } from '../core/errors.js';

/** Fastify's router refuses longer path parameters (its default `maxParamLength`). */
export const MAX_PATH_PARAM_CHARS = 100;

export const STATUS_OF_CODE: Readonly<Record<ErrorCode | 'not_implemented', number>> = {
  invalid_request: 400,
  unauthorized: 401,
  not_found: 404,
  version_conflict: 409,
  conflict: 409,
  illegal_transition: 409,
  payload_too_large: 413,
  rate_limited: 429,
  internal: 500,
  not_implemented: 501,
  upstream_unavailable: 502,
  store_unavailable: 503,
  closed: 503,
};

export interface ErrorBody {
  readonly error: {
    readonly code: string;
    readonly message: string;
    readonly details?: Record<string, unknown>;
  };
}

interface ValidationIssue {
  readonly instancePath?: string;
  readonly message?: string;
  readonly params?: Record<string, unknown>;
}

function fieldPath(context: string | undefined, instancePath: string | undefined): string {
  const parts = (instancePath ?? '').split('/').filter((p) => p !== '');
  let path = context === 'querystring' ? 'query' : (context ?? 'body');
  for (const part of parts) path += /^\d+$/.test(part) ? `[${part}]` : `.${part}`;
  return path;
}

function fromValidation(error: FastifyError): AgentStateError {
  const issues = (error.validation ?? []) as ValidationIssue[];
  const described = issues.map((issue) => {
    const keys = issue.params?.keys;
    const base = fieldPath(error.validationContext, issue.instancePath);
    const field = Array.isArray(keys) && keys.length > 0 ? `${base}.${keys.join(', ')}` : base;
    return { field, message: issue.message ?? 'is not valid' };
  });
  const first = described[0] ?? { field: error.validationContext ?? 'request', message: 'is not valid' };
  return new AgentStateError('invalid_request', `${first.field}: ${first.message}`, {
    details: { issues: described },
  });
}

/** Any thrown value as an AgentStateError with a code the API documents. */
export function toAgentStateError(error: unknown): AgentStateError {
  if (error instanceof AgentStateError) return error;
  const fe = error as FastifyError;
  if (fe !== null && typeof fe === 'object') {
    if (Array.isArray(fe.validation)) return fromValidation(fe);
    const status = typeof fe.statusCode === 'number' ? fe.statusCode : 500;
    if (status === 413)
      return new AgentStateError('payload_too_large', 'the request body is larger than allowed');
    if (status === 429)
      return new AgentStateError('rate_limited', fe.message || 'too many requests; slow down');
    if (status === 404) return new AgentStateError('not_found', fe.message || 'not found');
    if (status >= 400 && status < 500) {
      const message =
        fe.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' ? 'send the body as application/json' : fe.message;
      return new AgentStateError('invalid_request', `body: ${message}`);
    }
  }
  return new AgentStateError('internal', 'internal error', { cause: error });
}

/** A route the server cannot serve in this configuration (for example: turns without the agent runtime). */
export class NotImplementedError extends Error {
  readonly code = 'not_implemented';
}

export function statusOf(error: AgentStateError | NotImplementedError): number {
  return STATUS_OF_CODE[error.code] ?? 500;
}

export function errorBody(error: AgentStateError | NotImplementedError): ErrorBody {
  if (error instanceof NotImplementedError) return { error: { code: error.code, message: error.message } };
  const code = error.code === 'closed' ? 'store_unavailable' : error.code;
  const message = error.code === 'closed' ? 'the store is closed' : error.message;
  return { error: { code, message, ...(error.details ? { details: { ...error.details } } : {}) } };
}

export function errorHandler(error: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const mapped = error instanceof NotImplementedError ? error : toAgentStateError(error);
  const status = statusOf(mapped);
  if (status >= 500) request.log.error({ err: error }, 'request failed');
  else request.log.info({ code: mapped.code }, mapped.message);
  if (mapped.code === 'rate_limited') {
    const retry = (error as { headers?: Record<string, unknown> }).headers?.['retry-after'];
    if (retry !== undefined) void reply.header('retry-after', String(retry));
  }
  void reply.status(status).send(errorBody(mapped));
}

/** A route that needs the agent runtime, on a server started without one. */
export function notImplemented(what: string): NotImplementedError {
  return new NotImplementedError(`${what} needs the agent runtime, which this server was started without`);
}

/**
 * Fastify's `frameworkErrors`: what its router refuses before any route runs (a malformed percent-encoding,
 * a path parameter longer than the router takes) answered in the same format, as `invalid_request`.
 */
export function frameworkErrorHandler(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  const message =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? `path: a parameter is longer than ${MAX_PATH_PARAM_CHARS} characters (no id is that long)`
      : error.code === 'FST_ERR_BAD_URL'
        ? 'path: not a valid URL (a malformed percent-encoding)'
        : undefined;
  errorHandler(
    message === undefined ? error : new AgentStateError('invalid_request', message),
    request,
    reply,
  );
}

/**
 * Fastify's `clientErrorHandler`: what Node's HTTP parser refuses before fastify sees a request (headers over
 * its size limit, a request not received in time, bytes that are not HTTP), answered in the same format and
 * with the status that says which, then the connection is closed.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, text, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', "headers: larger than the server takes (Node's 16 KB)"]
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', 'the request was not received in time']
        : [400, 'Bad Request', 'the request is not valid HTTP'];
  const body = JSON.stringify({ error: { code: 'invalid_request', message } });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${text}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}
