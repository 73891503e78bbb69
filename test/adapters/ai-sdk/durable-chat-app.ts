/**
 * A chat whose turns are durable runs (`createChatStore({ answer })`), for the durable chat tests and
 * their crash child: `streamText` against the local Chat Completions server with `durableModel`, and a
 * `book_flight` tool wrapped by `durableTools` whose effect is a line in a ledger file of its own (shared
 * by the processes of a test), found again by `lookup` through the call's idempotency key.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { convertToModelMessages, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import {
  type ChatStore,
  createChatStore,
  durableModel,
  durableTools,
  idempotencyKeyOf,
} from '../../../src/adapters/ai-sdk/index.js';
import type { JsonObject } from '../../../src/core/json.js';
import type { Scope, StateStore } from '../../../src/store/types.js';

export interface LedgerLine {
  readonly key: string;
  readonly booking: JsonObject;
}

/** Every booking the ledger holds, oldest first. */
export function ledgerOf(file: string): LedgerLine[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as LedgerLine);
}

export interface BookingChatOptions {
  readonly store: StateStore;
  readonly scope: Scope;
  readonly modelBaseURL: string;
  readonly ledger: string;
  readonly leaseMs?: number;
  /** Called once a booking is in the ledger, before the tool returns. */
  readonly afterBooking?: () => Promise<void>;
}

export function bookingChat(options: BookingChatOptions): ChatStore {
  const model = createOpenAICompatible({ name: 'local', baseURL: options.modelBaseURL }).chatModel('local');
  return createChatStore({
    store: options.store,
    scope: options.scope,
    ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }),
    answer: async ({ ctx, messages }) => {
      const tools = durableTools(
        ctx,
        {
          book_flight: tool({
            description: 'Books a seat on a flight.',
            inputSchema: jsonSchema<{ flight: string }>({
              type: 'object',
              properties: { flight: { type: 'string' } },
              required: ['flight'],
            }),
            execute: async ({ flight }, call) => {
              const key = idempotencyKeyOf(call);
              const booking = { flight, pnr: `PNR${ledgerOf(options.ledger).length + 1}` };
              appendFileSync(options.ledger, `${JSON.stringify({ key, booking })}\n`);
              await options.afterBooking?.();
              return booking;
            },
          }),
        },
        {
          book_flight: {
            lookup: async (key) => {
              const line = ledgerOf(options.ledger).find((l) => l.key === key);
              return line === undefined ? { found: false } : { found: true, result: line.booking };
            },
          },
        },
      );
      const result = streamText({
        model: durableModel(ctx, model),
        tools,
        stopWhen: stepCountIs(4),
        maxRetries: 0,
        messages: await convertToModelMessages(messages),
      });
      return result.toUIMessageStream();
    },
  });
}
