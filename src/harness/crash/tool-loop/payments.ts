/**
 * The crash harness's payment downstream: a card charge that does NOT deduplicate (every call charges,
 * whatever its key), kept as the deploy tools keep their effects: a line per call and a line per charge in
 * an fsync'd effect log (src/demo/effects.ts), the charge's line being its commit point and what
 * `lookup(key)` reads. Only the runtime's record-before-run and its recovery through `lookup` keep it
 * exactly once; the effect log shows every charge.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { JsonObject } from '../../../core/json.js';
import type { DemoHooks } from '../../../demo/deploy/workspace.js';
import { appendEffectLine, readEffectLog } from '../../../demo/effects.js';
import type { LookupAnswer } from '../../../durable/types.js';

export const PAYMENTS_EFFECTS_FILE = 'payments-effects.jsonl';
export const PAY_TOOL = 'pay';

export interface Charge {
  readonly booking_id: string;
  readonly amount_eur: number;
  readonly card: string;
}

export function paymentsEffectsPath(dir: string): string {
  return join(dir, PAYMENTS_EFFECTS_FILE);
}

/**
 * The logical step of a charge: this amount on this card, whatever the key (and whatever the booking's id,
 * which the airline derives from the booking's key).
 */
function stepOf(charge: Charge): string {
  return `pay ${charge.amount_eur} EUR on ${charge.card}`;
}

export interface Payments {
  charge(charge: Charge, key: string): Promise<JsonObject>;
  lookup(key: string): Promise<LookupAnswer<JsonObject>>;
}

export function createPayments(dir: string, hooks: DemoHooks = {}): Payments {
  const path = paymentsEffectsPath(dir);
  return {
    async charge(charge, key) {
      const step = stepOf(charge);
      appendEffectLine(path, { kind: 'call', tool: PAY_TOOL, key, step });
      hooks.at?.('before_effect', PAY_TOOL, key);
      const payment_id = `pay_${createHash('sha256').update(key).digest('hex').slice(0, 20)}`;
      const result = { payment_id, status: 'CAPTURED', ...charge };
      // the effect line carries what lookup answers
      const effect = { kind: 'effect' as const, tool: PAY_TOOL, key, step, result };
      appendEffectLine(path, effect);
      hooks.at?.('effect_done', PAY_TOOL, key);
      return result;
    },
    async lookup(key) {
      const line = (readEffectLog(path) ?? []).find((l) => l.kind === 'effect' && l.key === key);
      if (line === undefined) return { found: false };
      return { found: true, result: (line as unknown as { result: JsonObject }).result };
    },
  };
}
