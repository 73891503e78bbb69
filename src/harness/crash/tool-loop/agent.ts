/**
 * The model-driven tool-loop agent of the crash harness, and what a run of it must reproduce. Its tools:
 * `search_flights` (read-only: a recorded step), `book_flight` (the demo airline over HTTP, deduplicating
 * by key, with lookup) and `pay` (a card charge that does not deduplicate, with lookup). Each tool call
 * passes two kill points: before its effect and after it (`tool:<name>:before_effect|effect_done`).
 *
 * A framework is one way to write the loop (`plain`: runToolLoop on the kernel); all run in `durableRun`
 * with the same tools, and answer the same output.
 */
import { z } from 'zod';
import { type AgentTool, defineAgentTool, runToolLoop } from '../../../agents/tool-loop.js';
import type { JsonObject, JsonValue } from '../../../core/json.js';
import { CABINS } from '../../../demo/airline/booking.js';
import { createAirlineClient } from '../../../demo/airline/client.js';
import type { DemoHooks } from '../../../demo/deploy/workspace.js';
import { durableRun } from '../../../durable/run.js';
import type { DurableContext, DurableResult } from '../../../durable/types.js';
import type { Scope, StateStore } from '../../../store/types.js';
import type { ActionKey } from '../points.js';
import { TRIP_REQUEST } from './model.js';
import { createPayments } from './payments.js';

export const FRAMEWORKS = ['plain', 'ai-sdk', 'openai-agents', 'langgraph'] as const;
export type Framework = (typeof FRAMEWORKS)[number];

export const LOOP_RUN_NAME = 'tool_loop';
export const SYSTEM_PROMPT = 'You book flights and pay for them with the tools you have.';

export interface LoopEnv {
  readonly airlineUrl: string;
  /** Where the payments downstream keeps its effect log. */
  readonly workspaceDir: string;
  readonly modelUrl: string;
  readonly hooks: DemoHooks;
}

const BookParams = z.object({
  flight: z.string(),
  origin: z.string().length(3),
  destination: z.string().length(3),
  date: z.string(),
  cabin_class: z.enum(CABINS),
  passenger_name: z.string().min(1),
});
const PayParams = z.object({
  booking_id: z.string(),
  amount_eur: z.number().positive(),
  card: z.string(),
});
const SearchParams = z.object({ origin: z.string(), destination: z.string(), date: z.string() });

/** The loop's tools, for any framework: a name, a schema, and what runs (with lookup for effects). */
export function loopTools(env: LoopEnv): AgentTool[] {
  const airline = createAirlineClient({ baseUrl: env.airlineUrl });
  const payments = createPayments(env.workspaceDir, env.hooks);
  const at = (point: 'before_effect' | 'effect_done', tool: string, key: string) =>
    env.hooks.at?.(point, tool, key);
  return [
    defineAgentTool({
      name: 'search_flights',
      description: 'Flights between two airports on a date.',
      readOnly: true,
      parameters: SearchParams,
      run: async ({ origin, destination, date }, key) => {
        at('before_effect', 'search_flights', key);
        const flights = [{ flight: 'AS101', origin, destination, date, departs: '09:40' }];
        at('effect_done', 'search_flights', key);
        return { flights };
      },
    }),
    defineAgentTool({
      name: 'book_flight',
      description: 'Books a seat on a flight for one passenger; answers the booking with its PNR.',
      parameters: BookParams,
      run: async (p, key) => {
        at('before_effect', 'book_flight', key);
        const request = {
          origin: p.origin,
          destination: p.destination,
          date: p.date,
          cabin: p.cabin_class,
          passenger: p.passenger_name,
        };
        const { booking } = await airline.book(key, request);
        at('effect_done', 'book_flight', key);
        return booking as JsonObject;
      },
      lookup: async (key) => {
        const booking = await airline.findByKey(key);
        return booking === null ? { found: false } : { found: true, result: booking as JsonObject };
      },
    }),
    defineAgentTool({
      name: 'pay',
      description: 'Charges a card for a booking.',
      parameters: PayParams,
      run: (p, key) => payments.charge(p, key),
      lookup: (key) => payments.lookup(key),
    }),
  ];
}

/** The plain-code loop (src/agents/tool-loop.ts) over the kernel. */
async function plainLoop(ctx: DurableContext, env: LoopEnv): Promise<JsonValue> {
  const out = await runToolLoop(ctx, {
    model: { baseURL: env.modelUrl, model: 'scripted', maxRetries: 0 },
    system: SYSTEM_PROMPT,
    input: TRIP_REQUEST,
    tools: loopTools(env),
  });
  return { reply: out.reply, tool_calls: out.tool_calls.map((c) => ({ ...c })) };
}

export type Loop = (ctx: DurableContext, env: LoopEnv) => Promise<JsonValue>;

/**
 * The loop of a framework, its modules loaded (before a resumed run's clock starts: loading the AI SDK is
 * the process starting, not the run resuming). The frameworks are development dependencies: loaded only here.
 */
export async function loadLoop(framework: Framework): Promise<Loop> {
  if (framework === 'ai-sdk') return (await import('./ai-sdk-loop.js')).aiSdkLoop;
  if (framework === 'openai-agents') return (await import('./openai-agents-loop.js')).openAIAgentsLoop;
  if (framework === 'langgraph') return (await import('./langgraph-loop.js')).langGraphLoop;
  return plainLoop;
}

export interface LoopRun {
  readonly store: StateStore;
  readonly scope: Scope;
  readonly sessionId: string;
  readonly leaseOwner: string;
  readonly loop: Loop;
  readonly env: LoopEnv;
}

/** Starts or continues the session's run of the loop. */
export function runLoop(run: LoopRun): Promise<DurableResult<JsonValue>> {
  const { loop } = run;
  return durableRun(
    run.store,
    {
      scope: run.scope,
      sessionId: run.sessionId,
      name: LOOP_RUN_NAME,
      key: 'trip',
      lease: { owner: run.leaseOwner },
    },
    (ctx) => loop(ctx, run.env),
  );
}

/** What a resumed run must reproduce: its answer, its task, actions and checkpoints (ids normalized later). */
export async function loopOutput(
  store: StateStore,
  scope: Scope,
  result: DurableResult<JsonValue>,
): Promise<{ output: JsonValue; keys: ActionKey[] }> {
  const { resumed: _resumed, input_used: _used, ...answer } = result;
  const task = await store.getTask(scope, result.task_id);
  const events = await store.listTaskEvents(scope, result.task_id);
  const listed = await store.listActions(scope, { task_id: result.task_id, limit: 500 });
  // in the order of the loop's calls: one action per tool, by the ordinal its key begins with
  const ordinal = (key: string) => Number(key.split(':').at(-2));
  const actions = [...listed.items].sort((a, b) => ordinal(a.idempotency_key) - ordinal(b.idempotency_key));
  const checkpoints = await store.listCheckpoints(scope, result.run_id, { limit: 500 });
  const output = {
    answer,
    task:
      task === null
        ? null
        : {
            type: task.type,
            state: task.state,
            status_line: task.status_line,
            data: task.data,
            version: task.version,
          },
    events: events.map((e) => ({ from: e.from_state, to: e.to_state, cause: e.cause, v: e.task_version })),
    tasks: [
      {
        actions: actions.map((a) => ({
          type: a.type,
          tool: a.tool,
          status: a.status,
          params: a.params,
          result: a.result,
          error: a.error,
          attempts: a.attempts,
          note: a.note,
        })),
      },
    ],
    checkpoints: checkpoints.items
      .map((c) => ({ step: c.step, label: c.label, parent: c.parent_id !== null }))
      .sort((a, b) => a.step - b.step),
  };
  const keys = actions.map((a) => ({ tool: a.tool, key: a.idempotency_key, status: a.status }));
  return { output: JSON.parse(JSON.stringify(output)) as JsonValue, keys };
}
