/**
 * The tool-loop agent as a crash-harness subject: the harness starts the scripted model (one for the whole
 * test) and a demo airline for each interrupted run (its ledger and effect log in that run's folder), and
 * runs tool-loop/child.ts. A run's output names its booking and payment by ids derived from its keys,
 * which differ from run to run: they are compared by order of appearance, as the store's ids are.
 */
import { join } from 'node:path';
import type { JsonValue } from '../../../core/json.js';
import { AIRLINE_EFFECTS_FILE } from '../../../demo/airline/ledger-book.js';
import { type AirlineService, startAirlineService } from '../../../demo/airline/server.js';
import { normalizeOutput } from '../report.js';
import type { CrashSubject } from '../run.js';
import { runChild } from '../spawn-child.js';
import type { Framework } from './agent.js';
import { startScriptedModel } from './model.js';
import { paymentsEffectsPath } from './payments.js';

/** Fields whose values a downstream derives from the call's idempotency key. */
const KEYED_FIELDS = new Set(['booking_id', 'pnr', 'payment_id']);

function keyedValues(value: JsonValue, found: string[]): string[] {
  if (Array.isArray(value)) for (const item of value) keyedValues(item, found);
  else if (value !== null && typeof value === 'object') {
    for (const [field, inner] of Object.entries(value)) {
      if (KEYED_FIELDS.has(field) && typeof inner === 'string' && !found.includes(inner)) found.push(inner);
      else if (inner !== undefined) keyedValues(inner, found);
    }
  }
  return found;
}

/** The output with key-derived values named by their order of appearance, then ids (`normalizeOutput`). */
export function normalizeLoopOutput(output: JsonValue): string {
  let text = normalizeOutput(output);
  keyedValues(output, []).forEach((value, index) => {
    text = text.split(value).join(`<keyed#${index + 1}>`);
  });
  return text;
}

export async function toolLoopSubject(framework: Framework): Promise<CrashSubject> {
  const model = await startScriptedModel();
  let airline: { dir: string; service: AirlineService } | null = null;
  return {
    agent: `tool_loop (${framework})`,
    async runChild(child) {
      // One airline per interrupted run, kept across its children; the one before is closed.
      if (airline?.dir !== child.workspaceDir) {
        await airline?.service.close();
        const service = await startAirlineService({ dataDir: join(child.workspaceDir, 'airline') });
        airline = { dir: child.workspaceDir, service };
      }
      return runChild({
        ...child,
        script: 'tool-loop/child',
        extraArgs: ['--framework', framework, '--model', model.url, '--airline', airline.service.url],
      });
    },
    effectLogs: (dir) => [join(dir, 'airline', AIRLINE_EFFECTS_FILE), paymentsEffectsPath(dir)],
    normalize: normalizeLoopOutput,
    async close() {
      await airline?.service.close();
      await model.close();
    },
  };
}
