/** The one error class of agentstate. `code` is stable and machine-readable; the HTTP layer maps it to a status. */
export type ErrorCode =
  | 'invalid_request'
  | 'version_conflict'
  | 'conflict'
  | 'not_found'
  | 'closed'
  | 'store_unavailable'
  | 'unauthorized'
  | 'payload_too_large'
  | 'rate_limited'
  | 'illegal_transition'
  | 'upstream_unavailable'
  | 'internal';

export interface AgentStateErrorOptions {
  readonly cause?: unknown;
  readonly details?: Readonly<Record<string, unknown>>;
}

export class AgentStateError extends Error {
  readonly code: ErrorCode;
  readonly details: Readonly<Record<string, unknown>> | undefined;

  constructor(code: ErrorCode, message: string, options: AgentStateErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AgentStateError';
    this.code = code;
    this.details = options.details;
  }
}

export function isAgentStateError(value: unknown, code?: ErrorCode): value is AgentStateError {
  return value instanceof AgentStateError && (code === undefined || value.code === code);
}

/** A stale expected version. `details` names the record and the version it has now. */
export function versionConflict(
  adapter: string,
  kind: string,
  id: string,
  expected: number,
  actual: number | null,
): AgentStateError {
  const now = actual === null ? 'it does not exist' : `it is at version ${actual}`;
  return new AgentStateError(
    'version_conflict',
    `[${adapter}] ${kind} ${id}: expected version ${expected} but ${now}`,
    { details: { kind, id, expected_version: expected, current_version: actual } },
  );
}

export function invalidRequest(
  message: string,
  details?: Readonly<Record<string, unknown>>,
): AgentStateError {
  return new AgentStateError('invalid_request', message, details === undefined ? {} : { details });
}

/** A session the caller cannot run or read: not there, expired, or another user's. */
export function sessionNotFound(sessionId: string): AgentStateError {
  return new AgentStateError('not_found', `session ${sessionId} not found (or expired)`);
}

export function closedError(adapter: string): AgentStateError {
  return new AgentStateError('closed', `[${adapter}] the store is closed`);
}

export function storeUnavailable(adapter: string, cause: unknown): AgentStateError {
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new AgentStateError('store_unavailable', `[${adapter}] store unavailable: ${reason}`, { cause });
}
