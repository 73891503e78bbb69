/**
 * The agent runtime as `serve` and `chat` use it: the agents modules of src/server/agents-modules.ts, the
 * built-in one (the built-in agents with the demo tools, src/demo/agents-module.ts) first, then the
 * `--agents` module if one is given, with the models given (the offline `rules` model by default). Every module is given the same options:
 * `dataDir`, where the demo tools work, and `airlineUrl`, the demo airline `airline.book` calls: started here
 * in-process on loopback (its ledger under `<dataDir>/airline`) unless `AGENTSTATE_AIRLINE_URL` names one.
 */
import { resolve } from 'node:path';
import { DEMO_AGENTS_MODULE } from '../../demo/agents-module.js';
import { startAirlineService } from '../../demo/index.js';
import type { ModelRegistry } from '../../models/types.js';
import type { AgentsModuleRef } from '../../server/agents-modules.js';
import { linkAgentsModules } from '../../server/agents-modules.js';
import type { RuntimeSetup } from '../../server/runtime-runner.js';
import { CliError } from '../context.js';

export interface LinkedRuntime {
  readonly setup: RuntimeSetup;
  readonly agentNames: string[];
  /** The agents modules the runtime was built from, with their options: what a turn thread loads. */
  readonly modules: readonly AgentsModuleRef[];
  close(): Promise<void>;
}

export async function linkRuntime(
  dataDir: string,
  agentsModule?: string,
  /** The models turns run with (default: the `rules` model only). */
  models?: ModelRegistry,
): Promise<LinkedRuntime> {
  const given = process.env.AGENTSTATE_AIRLINE_URL;
  const airline = given ? null : await startAirlineService({ dataDir: resolve(dataDir, 'airline') });
  const options = { dataDir: resolve(dataDir), airlineUrl: given ?? (airline?.url as string) };
  const modules: AgentsModuleRef[] = [
    { module: DEMO_AGENTS_MODULE, options, label: 'the built-in agents' },
    ...(agentsModule === undefined
      ? []
      : [{ module: resolve(agentsModule), options, label: `--agents ${agentsModule}` }]),
  ];
  try {
    const linked = await linkAgentsModules(modules, models);
    return { ...linked, modules, close: async () => await airline?.close() };
  } catch (error) {
    await airline?.close();
    throw new CliError(error instanceof Error ? error.message : String(error));
  }
}
