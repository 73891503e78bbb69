/** The bad-input cases of validation.test.ts: each request, the status and code it answers, the word it names. */
import { queryCases } from './validation-query-cases.js';

/** The records a case may name, read when the case runs (the test makes them first). */
export interface ValidationIds {
  readonly sessionId: () => string;
  readonly taskId: () => string;
  readonly alice: () => string;
}

export interface Case {
  readonly name: string;
  readonly method: string;
  readonly path: () => string;
  readonly body?: unknown;
  readonly raw?: string;
  readonly headers?: Record<string, string>;
  readonly status: number;
  readonly code: string;
  /** A word the message must contain: the field or the limit it names. */
  readonly names: string;
}

const longText = 'x'.repeat(1001);
const msg = (content: string) => ({ role: 'user', content });

/** Cases of bodies and headers, over the ids of the records the test made. */
export function bodyCases(ids: ValidationIds): Case[] {
  const { sessionId: session, taskId: task } = ids;
  return [
    {
      name: 'malformed JSON',
      method: 'POST',
      path: () => '/v1/sessions',
      raw: '{"user_id": ',
      status: 400,
      code: 'invalid_request',
      names: 'JSON',
    },
    {
      name: 'JSON nested too deep',
      method: 'POST',
      path: () => '/v1/sessions',
      raw: `{"context":{"a":${'['.repeat(5000)}${']'.repeat(5000)}}}`,
      status: 400,
      code: 'invalid_request',
      names: 'deeper',
    },
    {
      name: 'body is not JSON',
      method: 'POST',
      path: () => '/v1/sessions',
      raw: 'user_id=a',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      status: 400,
      code: 'invalid_request',
      names: 'json',
    },
    {
      name: '__proto__ key',
      method: 'POST',
      path: () => '/v1/sessions',
      raw: `{"user_id":"${'u1'}","__proto__":{"x":1}}`,
      status: 400,
      code: 'invalid_request',
      names: 'JSON',
    },
    {
      name: 'unknown field',
      method: 'POST',
      path: () => '/v1/sessions',
      body: { user_id: 'u', colour: 'red' },
      status: 400,
      code: 'invalid_request',
      names: 'colour',
    },
    {
      name: 'wrong type',
      method: 'POST',
      path: () => '/v1/sessions',
      body: { user_id: 'u', ttl_seconds: 'soon' },
      status: 400,
      code: 'invalid_request',
      names: 'ttl_seconds',
    },
    {
      name: 'context not an object',
      method: 'POST',
      path: () => '/v1/sessions',
      body: { user_id: 'u', context: [1, 2] },
      status: 400,
      code: 'invalid_request',
      names: 'context',
    },
    {
      name: 'bad user id',
      method: 'POST',
      path: () => '/v1/sessions',
      body: { user_id: 'a b/c' },
      status: 400,
      code: 'invalid_request',
      names: 'user_id',
    },
    {
      name: 'negative ttl',
      method: 'POST',
      path: () => '/v1/sessions',
      body: { user_id: 'u', ttl_seconds: -5 },
      status: 400,
      code: 'invalid_request',
      names: 'ttl_seconds',
    },
    {
      name: 'oversized body',
      method: 'POST',
      path: () => '/v1/sessions',
      body: { user_id: 'u', context: { big: 'y'.repeat(70_000) } },
      status: 413,
      code: 'payload_too_large',
      names: 'larger',
    },
    {
      name: 'overlong message',
      method: 'POST',
      path: () => `/v1/sessions/${session()}/messages`,
      body: { messages: [msg(longText)] },
      status: 400,
      code: 'invalid_request',
      names: 'messages[0].content',
    },
    {
      name: 'too many messages',
      method: 'POST',
      path: () => `/v1/sessions/${session()}/messages`,
      body: { messages: [1, 2, 3, 4, 5, 6].map((i) => msg(`m${i}`)) },
      status: 400,
      code: 'invalid_request',
      names: 'messages',
    },
    {
      name: 'no messages',
      method: 'POST',
      path: () => `/v1/sessions/${session()}/messages`,
      body: { messages: [] },
      status: 400,
      code: 'invalid_request',
      names: 'messages',
    },
    {
      name: 'bad role',
      method: 'POST',
      path: () => `/v1/sessions/${session()}/messages`,
      body: { messages: [{ role: 'god', content: 'x' }] },
      status: 400,
      code: 'invalid_request',
      names: 'role',
    },
    {
      name: 'lone surrogate',
      method: 'POST',
      path: () => `/v1/sessions/${session()}/messages`,
      raw: '{"messages":[{"role":"user","content":"\\ud800"}]}',
      status: 400,
      code: 'invalid_request',
      names: 'surrogate',
    },
    {
      name: 'invalid session id',
      method: 'GET',
      path: () => '/v1/sessions/sess_nope',
      status: 400,
      code: 'invalid_request',
      names: 'params.id',
    },
    {
      name: 'task id where a session id belongs',
      method: 'GET',
      path: () => `/v1/sessions/${task()}`,
      status: 400,
      code: 'invalid_request',
      names: 'params.id',
    },
    {
      name: 'invalid task id',
      method: 'PATCH',
      path: () => '/v1/tasks/task_..%2F..%2Fetc',
      headers: { 'if-match': '1' },
      body: {},
      status: 400,
      code: 'invalid_request',
      names: 'id',
    },
    {
      name: 'missing If-Match',
      method: 'PATCH',
      path: () => `/v1/sessions/${session()}`,
      body: { status: 'paused' },
      status: 400,
      code: 'invalid_request',
      names: 'if-match',
    },
    {
      name: 'invalid If-Match',
      method: 'PATCH',
      path: () => `/v1/sessions/${session()}`,
      headers: { 'if-match': 'yesterday' },
      body: { status: 'paused' },
      status: 400,
      code: 'invalid_request',
      names: 'if-match',
    },
    {
      name: 'invalid If-Match on a task',
      method: 'PATCH',
      path: () => `/v1/tasks/${task()}`,
      headers: { 'if-match': '*' },
      body: { status_line: 'x' },
      status: 400,
      code: 'invalid_request',
      names: 'if-match',
    },
    {
      name: 'a cause without a state change (it would be dropped)',
      method: 'PATCH',
      path: () => `/v1/tasks/${task()}`,
      headers: { 'if-match': '1' },
      body: { cause: 'x' },
      status: 400,
      code: 'invalid_request',
      names: 'body.cause: only with a state change',
    },
    {
      name: 'setting a session expired',
      method: 'PATCH',
      path: () => `/v1/sessions/${session()}`,
      headers: { 'if-match': '1' },
      body: { status: 'expired' },
      status: 400,
      code: 'invalid_request',
      names: 'status',
    },
  ];
}

/** Every case. */
export function validationCases(ids: ValidationIds): Case[] {
  return [...bodyCases(ids), ...queryCases(ids)];
}
