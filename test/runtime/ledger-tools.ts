/**
 * Small real tools for the runtime tests: each keeps a ledger file, one JSON line per side effect with the
 * key it was performed under, which `lookup` reads. They do NOT deduplicate by key: every call that gets
 * past its faults performs its effect again, so a runtime that calls a tool for a step already done, or
 * retries blindly instead of looking up, leaves a second line that the tests count.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { DEPLOY_STEPS } from '../../src/agents/tool-params.js';
import type { JsonObject, JsonValue } from '../../src/core/json.js';
import { JsonValueSchema } from '../../src/core/model.js';
import {
  createToolRegistry,
  type LookupResult,
  type Tool,
  ToolError,
  type ToolRegistry,
} from '../../src/runtime/tool.js';

export interface LedgerLine {
  readonly tool: string;
  readonly key: string;
  readonly params: JsonValue;
  readonly result: JsonValue;
}

export function readLedger(path: string): LedgerLine[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as LedgerLine);
}

/** What a tool does on its next calls: 'ok', throw before or after its side effect, hang, refuse. */
export type Fault =
  | 'ok'
  | 'retryable'
  | 'rejected'
  | 'crash_before_effect'
  | 'crash_after_effect'
  | 'hang_after_effect';

export interface LedgerToolOptions {
  readonly ledger: string;
  /** Faults consumed one per execute call, in order; 'ok' after the list ends. */
  readonly faults?: Fault[];
  /** 'none' = no lookup; 'ambiguous' = lookup cannot tell. Default 'ledger'. */
  readonly lookup?: 'ledger' | 'none' | 'ambiguous';
}

export function ledgerTool(name: string, options: LedgerToolOptions): Tool {
  const find = (key: string) =>
    readLedger(options.ledger).find((line) => line.tool === name && line.key === key);
  const tool: Tool = {
    name,
    description: `${name} (writes a ledger line)`,
    params: JsonValueSchema,
    async execute(params, ctx) {
      const fault = options.faults?.shift() ?? 'ok';
      if (fault === 'retryable') throw new ToolError('retryable', 'busy', `${name}: downstream busy`);
      if (fault === 'rejected')
        throw new ToolError('rejected', 'refused', `${name}: refused by the downstream`);
      if (fault === 'crash_before_effect') throw new Error(`${name}: connection reset before the effect`);
      const input = (params ?? {}) as JsonObject;
      const result: JsonObject = { id: `${name}#${readLedger(options.ledger).length + 1}`, step: name };
      if (name === 'airline.book')
        result.booking_id = `BK-${String(input.passenger_name ?? '').length}${String(input.date ?? '')}`;
      if (name === 'deploy.deploy')
        result.url = `https://${String(input.service)}.${String(input.environment)}.example`;
      appendFileSync(
        options.ledger,
        `${JSON.stringify({ tool: name, key: ctx.idempotencyKey, params, result })}\n`,
      );
      if (fault === 'crash_after_effect') throw new Error(`${name}: connection reset after the effect`);
      if (fault === 'hang_after_effect') await new Promise((resolve) => setTimeout(resolve, 60_000).unref());
      return result;
    },
  };
  if (options.lookup === 'none') return tool;
  return {
    ...tool,
    async lookup(key): Promise<LookupResult> {
      if (options.lookup === 'ambiguous')
        return { found: 'ambiguous', reason: 'the downstream is being migrated' };
      const done = find(key);
      return done === undefined ? { found: false } : { found: true, result: done.result };
    },
  };
}

export function ledgerTools(
  ledger: string,
  perTool: Record<string, Omit<LedgerToolOptions, 'ledger'>> = {},
): ToolRegistry {
  return createToolRegistry(
    ['airline.book', ...DEPLOY_STEPS].map((name) => ledgerTool(name, { ledger, ...perTool[name] })),
  );
}
