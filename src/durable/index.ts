/**
 * Durable steps for any code: `durableRun(store, { scope, sessionId }, async (ctx) => ...)` records every
 * value that is not deterministic (`ctx.step`, `ctx.now`, `ctx.random`, `ctx.sleep`, `ctx.waitForInput`)
 * and every effect (`ctx.action`, with an idempotency key and recovery through `lookup`) in the run's
 * journal, so a run killed anywhere is continued by calling `durableRun` again, from any process.
 */

export { durableActionKey } from './action.js';
export type { Codec, Typed } from './codec.js';
export { jsonCodec, schemaCodec } from './codec.js';
export { DEFAULT_KEEP_DURABLE_CHECKPOINTS, DEFAULT_RUN_NAME, durableRun } from './run.js';
export { ActionFailedError } from './signals.js';
export type {
  ActionCall,
  ActionHandlers,
  DurableContext,
  DurableResult,
  DurableRunOptions,
  LookupAnswer,
  TypedRunOptions,
  WaitOptions,
} from './types.js';
