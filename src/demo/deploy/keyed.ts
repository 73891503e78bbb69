/**
 * Makes a deploy step idempotent by key: the ledger is checked first, so a second call with the same key
 * answers the recorded result without redoing the side effect; `lookup(key)` reads the same ledger.
 */
import type { z } from 'zod';
import type { JsonValue } from '../../core/json.js';
import { type LookupResult, type Tool, type ToolContext, ToolError } from '../../runtime/tool.js';
import { appendLedger, findLedgerEntry, fingerprintOf } from '../ledger.js';
import type { DeployWorkspace } from './workspace.js';

export interface StepSpec<P extends JsonValue> {
  readonly name: string;
  readonly description: string;
  readonly params: z.ZodType<P>;
  /** Does the side effect and answers a deterministic result (no time, no randomness, relative paths). */
  run(params: P, ctx: ToolContext): Promise<JsonValue>;
}

export function keyedStep<P extends JsonValue>(ws: DeployWorkspace, spec: StepSpec<P>): Tool<P> {
  return {
    name: spec.name,
    description: spec.description,
    params: spec.params,
    async execute(params, ctx) {
      const key = ctx.idempotencyKey;
      const fingerprint = fingerprintOf(params);
      const done = findLedgerEntry(ws.ledgerPath, key);
      if (done !== null) {
        if (done.tool === spec.name && done.fingerprint === fingerprint) return done.result;
        throw new ToolError(
          'rejected',
          'conflict',
          `[${spec.name}] idempotency key ${key} was already used by ${done.tool} with other parameters`,
          { details: { idempotency_key: key } },
        );
      }
      ws.hooks.at?.('before_effect', spec.name, key);
      const result = await spec.run(params, ctx);
      ws.hooks.at?.('effect_done', spec.name, key);
      appendLedger(ws.ledgerPath, { key, tool: spec.name, fingerprint, result });
      ws.hooks.at?.('ledger_written', spec.name, key);
      return result;
    },
    async lookup(idempotencyKey): Promise<LookupResult> {
      const done = findLedgerEntry(ws.ledgerPath, idempotencyKey);
      if (done === null) return { found: false };
      if (done.tool !== spec.name) {
        return {
          found: 'ambiguous',
          reason: `key ${idempotencyKey} was used by ${done.tool}, not ${spec.name}`,
        };
      }
      return { found: true, result: done.result };
    },
  };
}
