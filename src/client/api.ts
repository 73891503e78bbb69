/**
 * The typed methods: one per route, each a call of the openapi-fetch client whose paths, parameters and
 * bodies the generated types check. A method answers the body of a 2xx answer and throws
 * `AgentStateHttpError` for anything else.
 */
import type { Client } from 'openapi-fetch';
import { AgentStateHttpError, errorOfResponse, networkError } from './errors.js';
import type { paths } from './openapi.js';
import type {
  Action,
  BodyOf,
  Checkpoint,
  MemoryItem,
  Message,
  MintedToken,
  NewMessage,
  Page,
  QueryOf,
  RewindResult,
  Session,
  SessionContext,
  SessionWithTasks,
  Task,
  TaskEvent,
  TurnResult,
} from './types.js';

/** Options of one call. */
export interface CallOptions {
  readonly signal?: AbortSignal;
  /** The `Idempotency-Key` of a POST; default a fresh one per call (kept across its retries). */
  readonly idempotencyKey?: string;
  readonly headers?: Readonly<Record<string, string>>;
}

type Outcome = { data?: unknown; error?: unknown; response: Response };

/** Runs one call of the openapi-fetch client: its data on 2xx, else an `AgentStateHttpError`. */
export type Runner = <R extends Outcome>(
  label: string,
  call: () => Promise<R>,
) => Promise<Exclude<R['data'], undefined>>;

export function createRunner(baseUrl: string): Runner {
  return async <R extends Outcome>(label: string, call: () => Promise<R>) => {
    let outcome: R;
    try {
      outcome = await call();
    } catch (error) {
      if (error instanceof AgentStateHttpError || (error as Error | null)?.name === 'AbortError') throw error;
      throw networkError(error, label, baseUrl);
    }
    if (!outcome.response.ok) throw errorOfResponse(outcome.response, outcome.error, label);
    return outcome.data as Exclude<R['data'], undefined>;
  };
}

function init(options: CallOptions | undefined) {
  const headers: Record<string, string> = { ...options?.headers };
  if (options?.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
  return { headers, ...(options?.signal === undefined ? {} : { signal: options.signal }) };
}

/** Numbers of a query as the digit strings the API takes; empty values left out. */
function q<T extends object>(query: T | undefined): { [K in keyof T]: Exclude<T[K], number> } {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value !== undefined && value !== null && value !== '')
      out[key] = typeof value === 'number' ? String(value) : value;
  }
  return out as { [K in keyof T]: Exclude<T[K], number> };
}

type SessionPatch = BodyOf<'/v1/sessions/{id}', 'patch'>;
type ForkBody = BodyOf<'/v1/sessions/{id}/fork', 'post'>;
type RewindBody = BodyOf<'/v1/sessions/{id}/rewind', 'post'>;
type TaskPatch = BodyOf<'/v1/tasks/{id}', 'patch'>;
type ActionPatch = BodyOf<'/v1/actions/{id}', 'patch'>;
type MemoryRef = { readonly user_id: string; readonly namespace: string; readonly key: string };

export function createApi(raw: Client<paths>, run: Runner) {
  const one = (id: string) => ({ path: { id } });
  const version = (v: number | string) => ({ 'if-match': `"${v}"` });
  return {
    health: (o?: CallOptions) => run('GET /healthz', () => raw.GET('/healthz', init(o))),
    ready: (o?: CallOptions) => run('GET /readyz', () => raw.GET('/readyz', init(o))),
    tokens: {
      /** Mints a user token (with a tenant key). */
      mint: (body: BodyOf<'/v1/tokens', 'post'>, o?: CallOptions): Promise<MintedToken> =>
        run('POST /v1/tokens', () => raw.POST('/v1/tokens', { ...init(o), body })),
    },
    sessions: {
      create: (body: BodyOf<'/v1/sessions', 'post'> = {}, o?: CallOptions) =>
        run('POST /v1/sessions', () => raw.POST('/v1/sessions', { ...init(o), body })),
      list: (query?: QueryOf<'/v1/sessions', 'get'>, o?: CallOptions): Promise<Page<Session>> =>
        run('GET /v1/sessions', () => raw.GET('/v1/sessions', { ...init(o), params: { query: q(query) } })),
      get: (id: string, o?: CallOptions): Promise<SessionWithTasks> =>
        run('GET /v1/sessions/{id}', () => raw.GET('/v1/sessions/{id}', { ...init(o), params: one(id) })),
      /** Changes a session read at `expectedVersion` (sent as `If-Match`). */
      update: (id: string, expectedVersion: number, body: SessionPatch, o?: CallOptions) =>
        run('PATCH /v1/sessions/{id}', () =>
          raw.PATCH('/v1/sessions/{id}', {
            ...init(o),
            params: { ...one(id), header: version(expectedVersion) },
            body,
          }),
        ),
      end: async (id: string, o?: CallOptions): Promise<void> => {
        await run('DELETE /v1/sessions/{id}', () =>
          raw.DELETE('/v1/sessions/{id}', { ...init(o), params: one(id) }),
        );
      },
      /** Runs one turn of the session's agent. */
      turn: (id: string, input: string, o?: CallOptions): Promise<TurnResult> =>
        run(
          'POST /v1/sessions/{id}/turns',
          () => raw.POST('/v1/sessions/{id}/turns', { ...init(o), params: one(id), body: { input } }),
          // The route streams only when asked with Accept: text/event-stream (streamTurn); this call
          // never asks, and openapi-fetch parses the JSON answer.
        ).then((answer) => answer as TurnResult),
      resume: (id: string, o?: CallOptions): Promise<TurnResult> =>
        run('POST /v1/sessions/{id}/resume', () =>
          raw.POST('/v1/sessions/{id}/resume', { ...init(o), params: one(id), body: {} }),
        ),
      checkpoints: (id: string, query?: QueryOf<'/v1/sessions/{id}/checkpoints', 'get'>, o?: CallOptions) =>
        run(
          'GET /v1/sessions/{id}/checkpoints',
          (): Promise<{ data?: Page<Checkpoint>; response: Response }> =>
            raw.GET('/v1/sessions/{id}/checkpoints', { ...init(o), params: { ...one(id), query: q(query) } }),
        ),
      context: (
        id: string,
        query?: QueryOf<'/v1/sessions/{id}/context', 'get'>,
        o?: CallOptions,
      ): Promise<SessionContext> =>
        run('GET /v1/sessions/{id}/context', () =>
          raw.GET('/v1/sessions/{id}/context', { ...init(o), params: { ...one(id), query: q(query) } }),
        ),
      /** A new session that starts from this one after message `at_seq`, or at a checkpoint of it. */
      fork: (id: string, body: ForkBody, o?: CallOptions): Promise<Session> =>
        run('POST /v1/sessions/{id}/fork', () =>
          raw.POST('/v1/sessions/{id}/fork', { ...init(o), params: one(id), body }),
        ),
      /** The session continues after message `at_seq`; what came after stays readable in `branch`. */
      rewind: (id: string, body: RewindBody, o?: CallOptions): Promise<RewindResult> =>
        run('POST /v1/sessions/{id}/rewind', () =>
          raw.POST('/v1/sessions/{id}/rewind', { ...init(o), params: one(id), body }),
        ),
      /** The live sessions forked from this one (rewinds' branches included), oldest first, paged. */
      branches: (
        id: string,
        query?: QueryOf<'/v1/sessions/{id}/branches', 'get'>,
        o?: CallOptions,
      ): Promise<Page<Session>> =>
        run('GET /v1/sessions/{id}/branches', () =>
          raw.GET('/v1/sessions/{id}/branches', { ...init(o), params: { ...one(id), query: q(query) } }),
        ),
    },
    messages: {
      append: (sessionId: string, messages: NewMessage[], o?: CallOptions): Promise<{ items: Message[] }> =>
        run('POST /v1/sessions/{id}/messages', () =>
          raw.POST('/v1/sessions/{id}/messages', { ...init(o), params: one(sessionId), body: { messages } }),
        ),
      list: (
        sessionId: string,
        query?: QueryOf<'/v1/sessions/{id}/messages', 'get'>,
        o?: CallOptions,
      ): Promise<Page<Message>> =>
        run('GET /v1/sessions/{id}/messages', () =>
          raw.GET('/v1/sessions/{id}/messages', {
            ...init(o),
            params: { ...one(sessionId), query: q(query) },
          }),
        ),
    },
    tasks: {
      list: (query?: QueryOf<'/v1/tasks', 'get'>, o?: CallOptions): Promise<Page<Task>> =>
        run('GET /v1/tasks', () => raw.GET('/v1/tasks', { ...init(o), params: { query: q(query) } })),
      get: (id: string, o?: CallOptions): Promise<Task> =>
        run('GET /v1/tasks/{id}', () => raw.GET('/v1/tasks/{id}', { ...init(o), params: one(id) })),
      /** Changes a task read at `expectedVersion` (sent as `If-Match`). */
      update: (id: string, expectedVersion: number, body: TaskPatch, o?: CallOptions): Promise<Task> =>
        run('PATCH /v1/tasks/{id}', () =>
          raw.PATCH('/v1/tasks/{id}', {
            ...init(o),
            params: { ...one(id), header: version(expectedVersion) },
            body,
          }),
        ),
      events: (id: string, o?: CallOptions): Promise<{ items: TaskEvent[] }> =>
        run('GET /v1/tasks/{id}/events', () =>
          raw.GET('/v1/tasks/{id}/events', { ...init(o), params: one(id) }),
        ),
      actions: (id: string, query?: QueryOf<'/v1/tasks/{id}/actions', 'get'>, o?: CallOptions) =>
        run(
          'GET /v1/tasks/{id}/actions',
          (): Promise<{ data?: Page<Action>; response: Response }> =>
            raw.GET('/v1/tasks/{id}/actions', { ...init(o), params: { ...one(id), query: q(query) } }),
        ),
    },
    actions: {
      /** Begins an action; the same `idempotency_key` for the same action answers the existing one. */
      create: (body: BodyOf<'/v1/actions', 'post'>, o?: CallOptions): Promise<Action> =>
        run('POST /v1/actions', () => raw.POST('/v1/actions', { ...init(o), body })),
      list: (query?: QueryOf<'/v1/actions', 'get'>, o?: CallOptions): Promise<Page<Action>> =>
        run('GET /v1/actions', () => raw.GET('/v1/actions', { ...init(o), params: { query: q(query) } })),
      get: (id: string, o?: CallOptions): Promise<Action> =>
        run('GET /v1/actions/{id}', () => raw.GET('/v1/actions/{id}', { ...init(o), params: one(id) })),
      update: (id: string, body: ActionPatch, o?: CallOptions): Promise<Action> =>
        run('PATCH /v1/actions/{id}', () =>
          raw.PATCH('/v1/actions/{id}', { ...init(o), params: one(id), body }),
        ),
    },
    memory: {
      put: (
        ref: MemoryRef,
        body: BodyOf<'/v1/users/{user_id}/memory/{namespace}/{key}', 'put'>,
        o?: CallOptions,
      ): Promise<MemoryItem> =>
        run('PUT /v1/users/{user_id}/memory/{namespace}/{key}', () =>
          raw.PUT('/v1/users/{user_id}/memory/{namespace}/{key}', {
            ...init(o),
            params: { path: { ...ref } },
            body,
          }),
        ),
      get: (ref: MemoryRef, o?: CallOptions): Promise<MemoryItem> =>
        run('GET /v1/users/{user_id}/memory/{namespace}/{key}', () =>
          raw.GET('/v1/users/{user_id}/memory/{namespace}/{key}', {
            ...init(o),
            params: { path: { ...ref } },
          }),
        ),
      delete: async (ref: MemoryRef, o?: CallOptions): Promise<void> => {
        await run('DELETE /v1/users/{user_id}/memory/{namespace}/{key}', () =>
          raw.DELETE('/v1/users/{user_id}/memory/{namespace}/{key}', {
            ...init(o),
            params: { path: { ...ref } },
          }),
        );
      },
      list: (
        ref: { readonly user_id: string; readonly namespace: string },
        query?: QueryOf<'/v1/users/{user_id}/memory/{namespace}', 'get'>,
        o?: CallOptions,
      ): Promise<Page<MemoryItem>> =>
        run('GET /v1/users/{user_id}/memory/{namespace}', () =>
          raw.GET('/v1/users/{user_id}/memory/{namespace}', {
            ...init(o),
            params: { path: { ...ref }, query: q(query) },
          }),
        ),
    },
  };
}

export type Api = ReturnType<typeof createApi>;
