/**
 * The one payload every system stores: a run of checkpoints of an agent's state `{ messages, task }`.
 * It starts with 20 chat messages of 200 characters and a small task (about 8.6 KB of JSON); each step
 * appends one message and changes the task's `step`. Deterministic, so every system stores the same bytes.
 */
import type { JsonObject } from '../../core/json.js';

export const INITIAL_MESSAGES = 20;
export const CONTENT_CHARS = 200;

const WORDS = ['flight', 'to', 'Lisbon', 'on', 'Friday', 'please', 'the', 'morning', 'one', 'aisle', 'seat'];

function content(index: number): string {
  let text = `#${index}`;
  for (let w = index; text.length < CONTENT_CHARS; w += 7) text += ` ${WORDS[w % WORDS.length]}`;
  return text.slice(0, CONTENT_CHARS);
}

/** One chat message, shaped like the messages agentstate and LangChain keep. */
export function message(index: number): JsonObject {
  const user = index % 2 === 0;
  return {
    id: `msg_${String(index).padStart(26, '0')}`,
    role: user ? 'user' : 'assistant',
    kind: 'text',
    turn: Math.floor(index / 2),
    content: content(index),
    name: null,
    tool_calls: null,
    created_at: new Date(Date.UTC(2026, 0, 1, 9, 0, index)).toISOString(),
    metadata: user
      ? { channel: 'web', locale: 'en-GB' }
      : { model: 'rules-1', tokens: 48 + (index % 50), ms: 300 },
  };
}

export function task(step: number): JsonObject {
  return {
    id: 'task_00000000000000000000000001',
    type: 'flight_booking',
    state: step < 10 ? 'COLLECTING' : 'CONFIRMING',
    step,
    slots: { origin: 'LHR', destination: 'LIS', date: '2026-03-06', passengers: 1, seat: 'aisle' },
    status_line: `Collecting details for the flight to Lisbon (step ${step})`,
    version: step + 1,
    updated_at: new Date(Date.UTC(2026, 0, 1, 9, 1, step)).toISOString(),
  };
}

/** The state at `step` (0-based): the messages so far and the task. Arrays are fresh for each call. */
export function stateAt(step: number): { messages: JsonObject[]; task: JsonObject } {
  const messages: JsonObject[] = [];
  for (let i = 0; i < INITIAL_MESSAGES + step; i++) messages.push(message(i));
  return { messages, task: task(step) };
}

/** The states of one run, built once and shared read-only by every system. */
export function runStates(steps: number): { messages: JsonObject[]; task: JsonObject }[] {
  return Array.from({ length: steps }, (_, step) => stateAt(step));
}

export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
}
