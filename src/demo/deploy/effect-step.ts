/**
 * A deploy step as a downstream that does NOT deduplicate: every call performs its side effect, whatever its
 * idempotency key says. It logs the call, does the work, then appends the effect line (with its key, its
 * result and its logical step) to the workspace's effect log and fsyncs it: that line is the effect's
 * commit point and the record `lookup(key)` reads. Only the runtime's record-before-run and its recovery
 * through `lookup` keep such a downstream exactly once; the effect log shows every execution.
 */
import type { z } from 'zod';
import type { JsonValue } from '../../core/json.js';
import type { LookupResult, Tool, ToolContext } from '../../runtime/tool.js';
import { appendEffectLine, readEffectLog } from '../effects.js';
import { fingerprintOf } from '../ledger.js';
import type { DeployWorkspace, Target } from './workspace.js';

export interface StepSpec<P extends JsonValue & Target> {
  readonly name: string;
  readonly description: string;
  readonly params: z.ZodType<P>;
  /** Does the side effect and answers a deterministic result (no time, no randomness, relative paths). */
  run(params: P, ctx: ToolContext): Promise<JsonValue>;
}

/** The effect line a deploy step writes: the effect log's line plus what `lookup` answers. */
interface DeployEffect {
  readonly kind: 'effect';
  readonly tool: string;
  readonly key: string;
  readonly step: string;
  readonly fingerprint: string;
  readonly result: JsonValue;
}

/** The logical step of a call: this tool for this release, whatever its key. */
export function deployStepOf(tool: string, target: Target): string {
  return `${tool} ${target.service}/${target.environment}@${target.version}`;
}

function firstEffect(ws: DeployWorkspace, key: string): DeployEffect | null {
  const line = (readEffectLog(ws.effectsPath) ?? []).find((l) => l.kind === 'effect' && l.key === key);
  return line === undefined ? null : (line as unknown as DeployEffect);
}

export function effectStep<P extends JsonValue & Target>(ws: DeployWorkspace, spec: StepSpec<P>): Tool<P> {
  return {
    name: spec.name,
    description: spec.description,
    params: spec.params,
    async execute(params, ctx) {
      const key = ctx.idempotencyKey;
      const step = deployStepOf(spec.name, params);
      appendEffectLine(ws.effectsPath, { kind: 'call', tool: spec.name, key, step });
      ws.hooks.at?.('before_effect', spec.name, key);
      const result = await spec.run(params, ctx);
      const effect: DeployEffect = {
        kind: 'effect',
        tool: spec.name,
        key,
        step,
        fingerprint: fingerprintOf(params),
        result,
      };
      appendEffectLine(ws.effectsPath, effect);
      ws.hooks.at?.('effect_done', spec.name, key);
      return result;
    },
    async lookup(idempotencyKey): Promise<LookupResult> {
      const done = firstEffect(ws, idempotencyKey);
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
