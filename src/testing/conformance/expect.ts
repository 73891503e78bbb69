/** Assertions shared by the concern files. */
import { expect } from 'vitest';
import { type AgentStateError, type ErrorCode, isAgentStateError } from '../../core/errors.js';
import type { StateStore } from '../../store/types.js';

/**
 * Awaits `work` and asserts it failed with an AgentStateError of `code` whose message starts with the
 * adapter's name in brackets and contains every one of `parts`.
 */
export async function expectError(
  store: StateStore,
  work: Promise<unknown>,
  code: ErrorCode,
  ...parts: string[]
): Promise<AgentStateError> {
  let caught: unknown = null;
  try {
    await work;
  } catch (error) {
    caught = error;
  }
  if (caught === null) throw new Error(`expected an error with code ${code}, but the call succeeded`);
  if (!isAgentStateError(caught)) throw caught;
  expect(caught.code, caught.message).toBe(code);
  expect(caught.message.startsWith(`[${store.adapter}]`), caught.message).toBe(true);
  for (const part of parts) expect(caught.message).toContain(part);
  return caught;
}

/** Shorthand for the most common failure: bad input. */
export function expectInvalid(store: StateStore, work: Promise<unknown>, ...parts: string[]) {
  return expectError(store, work, 'invalid_request', ...parts);
}

/** Milliseconds of an ISO timestamp. */
export function ms(iso: string): number {
  return Date.parse(iso);
}
