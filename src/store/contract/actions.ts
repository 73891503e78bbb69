/** Actions: a tool call recorded before it runs, begun once per idempotency key. */
import type { JsonValue } from '../../core/json.js';
import type { Action, ActionError, ActionStatus } from '../../core/model.js';
import type { Page, PageQuery, ReadScope, Scope } from './common.js';

export interface NewAction {
  readonly id?: string;
  readonly task_id: string;
  readonly session_id?: string | null;
  readonly type: string;
  readonly tool?: string | null;
  readonly params: JsonValue;
  /** Unique per tenant and user: beginning an action with a key that exists returns the existing action. */
  readonly idempotency_key: string;
}

export interface ActionCompletion {
  readonly status: 'SUCCESS' | 'FAILED';
  readonly result?: JsonValue;
  readonly error?: ActionError;
}

export interface ActionResolution extends ActionCompletion {
  /** Who resolved it and why, kept in `note`. */
  readonly note: string;
}

export interface ActionQuery extends PageQuery {
  readonly task_id?: string;
  readonly status?: ActionStatus;
}

export interface ActionCalls {
  beginAction(scope: Scope, input: NewAction): Promise<{ action: Action; created: boolean }>;
  getAction(scope: ReadScope, id: string): Promise<Action | null>;
  getActionByKey(scope: Scope, idempotency_key: string): Promise<Action | null>;
  /** PENDING -> SUCCESS | FAILED. */
  completeAction(scope: ReadScope, id: string, completion: ActionCompletion): Promise<Action>;
  /** PENDING -> UNKNOWN with the reason in `note`. */
  markActionUnknown(scope: ReadScope, id: string, note: string): Promise<Action>;
  /** PENDING | UNKNOWN -> SUCCESS | FAILED, by a person or a later lookup. */
  resolveAction(scope: ReadScope, id: string, resolution: ActionResolution): Promise<Action>;
  /** Counts one more attempt of a PENDING action (a retry with the same key). */
  recordAttempt(scope: ReadScope, id: string): Promise<Action>;
  listActions(scope: ReadScope, query?: ActionQuery): Promise<Page<Action>>;
}
