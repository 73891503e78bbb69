/**
 * The OpenAPI document's account of the event streams: the routes that answer Server-Sent Events with
 * `Accept: text/event-stream` get that content type beside their JSON answer, and the run event (its
 * types and what each carries) is a component. The routes' zod schemas describe JSON only, so this is
 * added to the document once it is built.
 */
import { RUN_EVENT_TYPES } from '../core/model.js';

type Doc = Record<string, unknown> & { paths?: Record<string, Record<string, unknown>> };

const EVENT_DATA: Readonly<Record<(typeof RUN_EVENT_TYPES)[number], string>> = {
  'run.started': '{ run_id, session_id, agent, model, resumed }: an attempt of the run starts',
  'message.delta': '{ text }: the model’s reply as it streams, in chunks of ~100 characters or ~50 ms',
  'message.created': '{ message }: a message the run wrote',
  'task.updated': '{ task_id, type, state, slots, status_line, version }',
  'action.updated': '{ action_id, task_id, type, tool, status, idempotency_key, attempts, error }',
  'checkpoint.created': '{ checkpoint_id, step, label, task_id }',
  'run.waiting': '{ task_id, reason }: the run ends waiting for the user',
  'run.completed': 'the JSON a turn answers without the stream (final)',
  'run.failed': '{ error: { code, message } } (final; the run may be resumed later)',
  'run.cancelled': '{ run_id, session_id } (final)',
};

const STREAMS: readonly [path: string, method: string][] = [
  ['/v1/sessions/{id}/turns', 'post'],
  ['/v1/sessions/{id}/runs/{run_id}/events', 'get'],
  ['/v1/sessions/{id}/events', 'get'],
];

export const RUN_EVENT_COMPONENT = {
  type: 'object',
  description: `One event of a run's log, sent as an SSE frame: \`id:\` (opaque, ordered within the run; send it back as Last-Event-ID), \`event:\` (the type) and \`data:\` (this object as JSON). Types: ${RUN_EVENT_TYPES.map((type) => `\`${type}\` ${EVENT_DATA[type]}`).join('; ')}.`,
  required: ['id', 'run_id', 'session_id', 'type', 'data', 'created_at'],
  properties: {
    id: { type: 'string' },
    run_id: { type: 'string' },
    session_id: { type: 'string' },
    type: { type: 'string', enum: [...RUN_EVENT_TYPES] },
    data: { type: 'object', additionalProperties: true },
    created_at: { type: 'string', format: 'date-time' },
  },
} as const;

/** The document with the event streams described (a copy; `doc` is not changed). */
export function withEventStreams<T extends object>(doc: T): T {
  const copy = structuredClone(doc) as Doc;
  const components = (copy.components ?? {}) as Record<string, Record<string, unknown>>;
  components.schemas = { ...(components.schemas ?? {}), RunEvent: RUN_EVENT_COMPONENT };
  copy.components = components;
  for (const [path, method] of STREAMS) {
    const operation = copy.paths?.[path]?.[method] as
      | { responses?: Record<string, { content?: Record<string, unknown> }> }
      | undefined;
    const ok = operation?.responses?.['200'];
    if (ok === undefined) continue;
    ok.content = {
      ...(ok.content ?? {}),
      'text/event-stream': {
        schema: { type: 'string', description: 'Server-Sent Events, each frame one RunEvent' },
        'x-sse-event': { $ref: '#/components/schemas/RunEvent' },
      },
    };
  }
  return copy as T;
}
