/**
 * The `openai` model: any OpenAI-compatible Chat Completions endpoint. Extraction and routing are forced
 * function calls whose parameters are JSON Schemas (the answer is validated with zod); replies are plain
 * completions that reword the runtime's draft, streamed piece by piece when the request asks for them
 * (`onDelta`).
 */
import { z } from 'zod';
import { AgentStateError } from '../../core/errors.js';
import type { JsonObject } from '../../core/json.js';
import { CITIES } from '../rules/cities.js';
import type {
  Extraction,
  ExtractRequest,
  Model,
  RouteDecision,
  RouteRequest,
  TaskTypeInfo,
} from '../types.js';
import { chatCompletion, functionArguments, type OpenAIConfig } from './client.js';
import { withConversation } from './conversation.js';
import { toolChat } from './tool-chat.js';

export type { OpenAIConfig } from './client.js';
export { chatCompletion } from './client.js';

export interface OpenAIModelOptions extends OpenAIConfig {
  /** The name in the model registry. Default 'openai'. */
  readonly name?: string;
  /** Default 0. */
  readonly temperature?: number;
}

const ExtractionAnswer = z.object({
  intent: z.string().nullable().optional(),
  answer: z.enum(['yes', 'no']).nullable().optional(),
  cancel: z.boolean().optional(),
  another: z.boolean().optional(),
  slots: z
    .record(z.string(), z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])))
    .optional(),
});

const RouteAnswer = z.object({
  task_id: z.string().nullable().optional(),
  new_task_type: z.string().nullable().optional(),
  reason: z.string().optional(),
});

function extractionSchema(types: readonly TaskTypeInfo[]): JsonObject {
  const slots: JsonObject = {};
  for (const type of types) {
    const properties: JsonObject = {};
    for (const slot of type.slots)
      properties[slot.name] = { type: ['string', 'null'], description: slot.description };
    slots[type.name] = { type: 'object', properties, additionalProperties: false };
  }
  return {
    type: 'object',
    properties: {
      intent: {
        type: ['string', 'null'],
        enum: [...types.map((t) => t.name), null],
        description: 'a task type the user asks to start, or null',
      },
      answer: {
        type: ['string', 'null'],
        enum: ['yes', 'no', null],
        description: 'the user answers a yes/no question',
      },
      cancel: { type: 'boolean', description: 'the user wants to cancel a task' },
      another: {
        type: 'boolean',
        description: 'the user asks for another task of a kind (not a change of the open one)',
      },
      slots: {
        type: 'object',
        properties: slots,
        additionalProperties: false,
        description: 'values said in this message only',
      },
    },
    required: ['intent', 'answer', 'cancel', 'another', 'slots'],
    additionalProperties: false,
  };
}

const ROUTE_SCHEMA: JsonObject = {
  type: 'object',
  properties: {
    task_id: {
      type: ['string', 'null'],
      description: 'the id of the open task the message belongs to, or null',
    },
    new_task_type: {
      type: ['string', 'null'],
      description: 'a task type to start when it belongs to no open task',
    },
    reason: { type: 'string' },
  },
  required: ['task_id', 'new_task_type', 'reason'],
  additionalProperties: false,
};

const CITY_CODES = Object.entries(CITIES)
  .map(([code, names]) => `${names[0]}=${code}`)
  .join(', ');

function invalidAnswer(what: string, error: z.ZodError): AgentStateError {
  return new AgentStateError(
    'upstream_unavailable',
    `[openai] the ${what} answer does not match its schema: ${error.issues[0]?.message ?? ''}`,
    {
      details: { source: 'model', issues: error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) },
    },
  );
}

function clean(
  slots: Record<string, Record<string, string | number | boolean | null>>,
): Record<string, JsonObject> {
  const out: Record<string, JsonObject> = {};
  for (const [type, values] of Object.entries(slots)) {
    const kept: JsonObject = {};
    for (const [name, value] of Object.entries(values))
      if (value !== null && value !== '') kept[name] = value;
    out[type] = kept;
  }
  return out;
}

export function createOpenAIModel(options: OpenAIModelOptions): Model {
  const temperature = options.temperature ?? 0;
  const call = async (
    name: string,
    description: string,
    parameters: JsonObject,
    system: string,
    user: string,
    context: ExtractRequest['context'],
  ) => {
    const message = await chatCompletion(options, {
      temperature,
      messages: withConversation(context, system, user),
      tools: [{ type: 'function', function: { name, description, parameters } }],
      tool_choice: { type: 'function', function: { name } },
    });
    return functionArguments(message, name);
  };
  return {
    name: options.name ?? 'openai',
    usesContext: true,
    async extract(request: ExtractRequest): Promise<Extraction> {
      const system = [
        'You read one user message of a task-oriented assistant and report what it says, by calling extract.',
        `Now is ${request.now}; the user's time zone is ${request.timezone}. Write dates as YYYY-MM-DD in that zone ("next Wednesday" is the Wednesday of next week).`,
        `Cities are IATA metropolitan codes: ${CITY_CODES}.`,
        `Task types: ${JSON.stringify(request.taskTypes)}`,
        request.expecting === null
          ? 'No question is pending.'
          : `The assistant just asked for ${request.expecting.type}.${request.expecting.slot}; a bare value answers it.`,
        'Report only what this message says; use null for anything it does not say.',
      ].join('\n');
      const raw = await call(
        'extract',
        'Report intent, slot values, yes/no and cancel.',
        extractionSchema(request.taskTypes),
        system,
        request.input,
        request.context,
      );
      const parsed = ExtractionAnswer.safeParse(raw);
      if (!parsed.success) throw invalidAnswer('extract', parsed.error);
      const known = new Set(request.taskTypes.map((t) => t.name));
      const intent = parsed.data.intent ?? null;
      return {
        intent: intent !== null && known.has(intent) ? intent : null,
        slots: clean(parsed.data.slots ?? {}),
        answer: parsed.data.answer ?? null,
        cancel: parsed.data.cancel ?? false,
        another: parsed.data.another ?? false,
      };
    },
    async route(request: RouteRequest): Promise<RouteDecision> {
      const system = [
        'Decide which open task a user message belongs to, by calling route.',
        `Open tasks: ${JSON.stringify(request.tasks)}`,
        `Task types: ${JSON.stringify(request.taskTypes.map((t) => ({ name: t.name, description: t.description })))}`,
        `What the message says: ${JSON.stringify(request.extraction)}`,
      ].join('\n');
      const raw = await call(
        'route',
        'Pick the open task, or a new task type, or neither.',
        ROUTE_SCHEMA,
        system,
        request.input,
        undefined,
      );
      const parsed = RouteAnswer.safeParse(raw);
      if (!parsed.success) throw invalidAnswer('route', parsed.error);
      return {
        task_id: parsed.data.task_id ?? null,
        new_task_type: parsed.data.new_task_type ?? null,
        reason: parsed.data.reason ?? 'chosen by the model',
      };
    },
    async reply(request): Promise<string> {
      const { onDelta } = request;
      const message = await chatCompletion(
        options,
        {
          temperature,
          messages: withConversation(
            request.context,
            `You are the assistant. Reword the draft reply for the user in ${request.language === 'zh' ? 'Chinese' : 'English'}. Keep every fact, code, date, name and number exactly. Answer with the reply text only.`,
            `User said: ${request.input}\nDraft reply: ${request.draft}`,
          ),
        },
        onDelta === undefined ? {} : { onDelta },
      );
      const text = message.content?.trim() ?? '';
      if (text.length > 0) return text;
      // Nothing (or only blanks) was said: the draft is the reply, and its one piece.
      onDelta?.(request.draft);
      return request.draft;
    },
    chat: (request) => toolChat(options, request, { temperature }),
  };
}
