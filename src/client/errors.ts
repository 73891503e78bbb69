/**
 * The client's one error class. A server error answers `{"error": {"code", "message", "details"?}}`
 * (docs/http-api.md#errors); it becomes an `AgentStateHttpError` with that `code`, the status, the details
 * and, when the server sent `Retry-After`, how long it asked to wait. A request that got no answer at all
 * (the connection was refused or broke, after the retries) has `code: 'network'` and `status: 0`; an answer
 * that is not the API's error format (a proxy's page) has `code: 'unexpected_response'`.
 */

/** The codes the server answers with, and their statuses (the server's `STATUS_OF_CODE`, less `closed`). */
export const SERVER_ERROR_STATUS = {
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
} as const;

export type ServerErrorCode = keyof typeof SERVER_ERROR_STATUS;

/** Every `code` an `AgentStateHttpError` can have. */
export type ClientErrorCode = ServerErrorCode | 'network' | 'unexpected_response';

export interface AgentStateHttpErrorInit {
  readonly code: ClientErrorCode;
  readonly status: number;
  readonly message: string;
  readonly details?: Readonly<Record<string, unknown>> | undefined;
  /** From `Retry-After`, in milliseconds; null when the answer had none. */
  readonly retryAfterMs?: number | null;
  /** `METHOD /path` of the request that failed. */
  readonly request?: string;
  readonly cause?: unknown;
}

export class AgentStateHttpError extends Error {
  readonly code: ClientErrorCode;
  /** The HTTP status; 0 when no answer came. */
  readonly status: number;
  readonly details: Readonly<Record<string, unknown>> | undefined;
  readonly retryAfterMs: number | null;
  readonly request: string | undefined;

  constructor(init: AgentStateHttpErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'AgentStateHttpError';
    this.code = init.code;
    this.status = init.status;
    this.details = init.details;
    this.retryAfterMs = init.retryAfterMs ?? null;
    this.request = init.request;
  }
}

/** True for an `AgentStateHttpError`, and, given a code, one with that code. */
export function isAgentStateHttpError(value: unknown, code?: ClientErrorCode): value is AgentStateHttpError {
  return value instanceof AgentStateHttpError && (code === undefined || value.code === code);
}

function isServerCode(code: unknown): code is ServerErrorCode {
  return typeof code === 'string' && Object.hasOwn(SERVER_ERROR_STATUS, code);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * `Retry-After` in milliseconds: delay-seconds or an HTTP date (relative to `now`); null when absent or
 * unreadable.
 */
export function retryAfterMsOf(headers: Headers, now: number = Date.now()): number | null {
  const value = headers.get('retry-after')?.trim();
  if (value === undefined || value === '') return null;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/** The error of an answer that is not 2xx, from its parsed body (or its text when it was not JSON). */
export function errorOfResponse(response: Response, body: unknown, request: string): AgentStateHttpError {
  const error = isRecord(body) && isRecord(body.error) ? body.error : null;
  const retryAfterMs = retryAfterMsOf(response.headers);
  if (error !== null && isServerCode(error.code) && typeof error.message === 'string') {
    return new AgentStateHttpError({
      code: error.code,
      status: response.status,
      message: error.message,
      details: isRecord(error.details) ? error.details : undefined,
      retryAfterMs,
      request,
    });
  }
  const text = typeof body === 'string' ? body.slice(0, 200) : '';
  return new AgentStateHttpError({
    code: 'unexpected_response',
    status: response.status,
    message: `${request} answered ${response.status}${text === '' ? '' : `: ${text}`}`,
    retryAfterMs,
    request,
  });
}

/** A request that got no answer (after its retries). */
export function networkError(cause: unknown, request: string, baseUrl: string): AgentStateHttpError {
  // fetch throws `TypeError: fetch failed` whose own cause says why (`ECONNREFUSED`, `bad port`, ...).
  const inner = (cause as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  const reason =
    typeof inner?.code === 'string'
      ? inner.code
      : typeof inner?.message === 'string'
        ? inner.message
        : cause instanceof Error
          ? cause.message
          : String(cause);
  return new AgentStateHttpError({
    code: 'network',
    status: 0,
    message: `cannot reach the server at ${baseUrl} (${reason})`,
    request,
    cause,
  });
}
