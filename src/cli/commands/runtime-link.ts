/**
 * The agent runtime as `serve` and `chat` use it: the built-in agents (plus those of an `--agents` module),
 * the offline `rules` model, and the demo tools. `airline.book` needs the demo airline: it is started
 * in-process on loopback (its ledger under `<dataDir>/airline`) unless `AGENTSTATE_AIRLINE_URL` names one.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BUILTIN_AGENTS } from '../../agents/index.js';
import { createDemoTools, startAirlineService } from '../../demo/index.js';
import type { RuntimeSetup } from '../../http/runtime-runner.js';
import { createRulesModel } from '../../models/rules/index.js';
import { createModelRegistry } from '../../models/types.js';
import { type Agent, createAgentRegistry } from '../../runtime/agent.js';
import { CliError } from '../context.js';

export interface LinkedRuntime {
  readonly setup: RuntimeSetup;
  readonly agentNames: string[];
  /** The demo airline `airline.book` calls (the one started here, or AGENTSTATE_AIRLINE_URL's). */
  readonly airlineUrl: string;
  close(): Promise<void>;
}

function isAgent(value: unknown): value is Agent {
  const v = value as Partial<Agent> | null;
  return typeof v === 'object' && v !== null && typeof v.name === 'string' && Array.isArray(v.taskTypes);
}

/** Agents a module exports: `agents` (an array) or any exported value shaped like an agent. */
async function agentsOf(module: string): Promise<Agent[]> {
  let loaded: Record<string, unknown>;
  try {
    loaded = (await import(pathToFileURL(resolve(module)).href)) as Record<string, unknown>;
  } catch (error) {
    throw new CliError(
      `cannot load --agents ${module}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  const listed = Array.isArray(loaded.agents) ? loaded.agents : Object.values(loaded);
  const agents = listed.filter(isAgent);
  if (agents.length === 0)
    throw new CliError(`--agents ${module} exports no agent (export const agents = [...])`);
  return agents;
}

/**
 * `airlineUrl`: the demo airline to call; without it, AGENTSTATE_AIRLINE_URL's, else one started here
 * (a turn thread is given its main thread's, so that every thread books with the same airline).
 */
export async function linkRuntime(
  dataDir: string,
  agentsModule?: string,
  airlineUrl?: string,
): Promise<LinkedRuntime> {
  const extra = agentsModule === undefined ? [] : await agentsOf(agentsModule);
  const agents = createAgentRegistry([...BUILTIN_AGENTS, ...extra]);
  const given = airlineUrl ?? process.env.AGENTSTATE_AIRLINE_URL;
  const airline = given ? null : await startAirlineService({ dataDir: resolve(dataDir, 'airline') });
  const url = given ?? (airline?.url as string);
  const tools = createDemoTools({ workspaceDir: resolve(dataDir, 'workspace'), airlineUrl: url });
  return {
    setup: { agents, models: createModelRegistry([createRulesModel()]), tools },
    agentNames: agents.names(),
    airlineUrl: url,
    close: async () => {
      await airline?.close();
    },
  };
}
