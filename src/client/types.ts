/**
 * Names for what the API takes and answers, all derived from the generated `paths` (src/client/openapi.ts),
 * so a change of the server's schemas shows here when the types are generated again.
 */
import type { paths } from './openapi.js';

export type { paths } from './openapi.js';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;
type JsonContent<R> = R extends { content: { 'application/json': infer B } } ? B : never;

/** The JSON body of the answer `status` of `M P`. */
export type AnswerOf<P extends keyof paths, M extends Method, S extends number> =
  Operation<P, M> extends { responses: infer R } ? (S extends keyof R ? JsonContent<R[S]> : never) : never;

/** The JSON body `M P` takes. */
export type BodyOf<P extends keyof paths, M extends Method> =
  Operation<P, M> extends { requestBody?: infer B } ? JsonContent<NonNullable<B>> : never;

/** The query of `M P`, with its whole-number fields (sent as digit strings) also taking numbers. */
export type QueryOf<P extends keyof paths, M extends Method> =
  Operation<P, M> extends { parameters: { query?: infer Q } }
    ? { [K in keyof NonNullable<Q>]?: NonNullable<Q>[K] | (K extends NumericQueryField ? number : never) }
    : never;

type NumericQueryField = 'limit' | 'after_seq' | 'max_tokens';

export type Session = AnswerOf<'/v1/sessions/{id}', 'patch', 200>;
export type SessionWithTasks = AnswerOf<'/v1/sessions/{id}', 'get', 200>;
/** A rewound session and the branch that holds what came after its rewind point. */
export type RewindResult = AnswerOf<'/v1/sessions/{id}/rewind', 'post', 200>;
export type OpenTaskSummary = SessionWithTasks['open_tasks'][number];
export type Message = AnswerOf<'/v1/sessions/{id}/messages', 'get', 200>['items'][number];
export type NewMessage = BodyOf<'/v1/sessions/{id}/messages', 'post'>['messages'][number];
export type TurnResult = AnswerOf<'/v1/sessions/{id}/turns', 'post', 200>;
export type Checkpoint = AnswerOf<'/v1/sessions/{id}/checkpoints', 'get', 200>['items'][number];
export type SessionContext = AnswerOf<'/v1/sessions/{id}/context', 'get', 200>;
export type Task = AnswerOf<'/v1/tasks/{id}', 'get', 200>;
export type TaskEvent = AnswerOf<'/v1/tasks/{id}/events', 'get', 200>['items'][number];
export type Action = AnswerOf<'/v1/actions/{id}', 'get', 200>;
export type MemoryItem = AnswerOf<'/v1/users/{user_id}/memory/{namespace}/{key}', 'get', 200>;
export type MintedToken = AnswerOf<'/v1/tokens', 'post', 201>;
export type ErrorAnswer = AnswerOf<'/v1/sessions/{id}', 'get', 404>;

/** A page of a list: its items and the cursor of the next page (null at the end). */
export interface Page<T> {
  readonly items: T[];
  readonly next_cursor: string | null;
}
