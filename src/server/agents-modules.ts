/**
 * Where a server's agents and their tools come from: agents modules. An agents module is an ES module that
 * exports
 *
 * - `agents`: an array of agents (or, without it, every export shaped like an agent), and, optionally,
 * - `tools`: an array of tools, a tool registry, or a function of the module's options that returns one of
 *   them (or a promise of it): how a tool learns where its downstream service is.
 *
 * One tool registry holds the tools of every module, and every agent's tool calls are looked up in it. The
 * main thread and every turn thread load the same modules with the same options (plain JSON, so a thread
 * can be sent them), so the threads' tools call the same downstream services.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { invalidRequest } from '../core/errors.js';
import type { JsonValue } from '../core/json.js';
import { createRulesModel } from '../models/rules/index.js';
import { createModelRegistry, type ModelRegistry } from '../models/types.js';
import { type Agent, createAgentRegistry } from '../runtime/agent.js';
import { createToolRegistry, type Tool, type ToolRegistry } from '../runtime/tool.js';
import type { RuntimeSetup } from './runtime-runner.js';

/** Options an agents module's `tools(options)` is given. */
export type AgentsModuleOptions = Readonly<Record<string, JsonValue>>;

export interface AgentsModuleRef {
  /** The module: a file path (from the working directory) or a `file:` URL. */
  readonly module: string;
  /** Given to the module's `tools(options)`. Default `{}`. */
  readonly options?: AgentsModuleOptions;
  /** How errors name the module. Default `the agents module <module>`. */
  readonly label?: string;
}

/** What an agents module gives: its agents and its tools. */
export interface AgentsModuleParts {
  readonly agents: Agent[];
  readonly tools: Tool[];
}

export interface LinkedAgents {
  /** The runtime of every module's agents and tools, with the given models (default: the `rules` model). */
  readonly setup: RuntimeSetup;
  readonly agentNames: string[];
}

type ToolsExport = readonly Tool[] | ToolRegistry;

/** An agent of task types, or an agent of code (`run`), whose task types may be left out. */
function isAgent(value: unknown): value is Agent {
  const v = value as Partial<Agent> | null;
  if (typeof v !== 'object' || v === null || typeof v.name !== 'string') return false;
  return Array.isArray(v.taskTypes) || typeof v.run === 'function';
}

/** An agent of code as the registry holds it: no task types, and its description as its greeting. */
function withTaskTypes(agent: Agent): Agent {
  // An agent of task types is kept as it is, its properties unread (a getter may have effects).
  if (Array.isArray(agent.taskTypes)) return agent;
  const greeting = agent.greeting ?? { en: agent.description ?? '', zh: agent.description ?? '' };
  return { ...agent, taskTypes: [], greeting };
}

function isRegistry(value: unknown): value is ToolRegistry {
  const v = value as Partial<ToolRegistry> | null;
  return typeof v === 'object' && v !== null && typeof v.get === 'function' && typeof v.names === 'function';
}

function urlOf(module: string): string {
  return module.startsWith('file:') ? module : pathToFileURL(resolve(module)).href;
}

function toolsOf(value: unknown, label: string): Tool[] {
  if (Array.isArray(value)) return [...(value as Tool[])];
  if (isRegistry(value)) return value.names().map((name) => value.get(name) as Tool);
  throw invalidRequest(`${label}: its tools must be an array of tools or a tool registry`);
}

/** Loads one agents module: its agents, and its tools built with the ref's options. */
export async function loadAgentsModule(ref: AgentsModuleRef): Promise<AgentsModuleParts> {
  const label = ref.label ?? `the agents module ${ref.module}`;
  let loaded: Record<string, unknown>;
  try {
    loaded = (await import(urlOf(ref.module))) as Record<string, unknown>;
  } catch (error) {
    throw invalidRequest(`cannot load ${label}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const listed = Array.isArray(loaded.agents) ? loaded.agents : Object.values(loaded);
  const agents = listed.filter(isAgent).map(withTaskTypes);
  if (agents.length === 0) throw invalidRequest(`${label} exports no agent (export const agents = [...])`);
  const given = loaded.tools;
  if (given === undefined) return { agents, tools: [] };
  const made =
    typeof given === 'function'
      ? await (given as (options: AgentsModuleOptions) => ToolsExport | Promise<ToolsExport>)(
          ref.options ?? {},
        )
      : given;
  return { agents, tools: toolsOf(made, label) };
}

/** The runtime setup of several agents modules: their agents in one registry, their tools in another. */
export async function linkAgentsModules(
  refs: readonly AgentsModuleRef[],
  models: ModelRegistry = createModelRegistry([createRulesModel()]),
): Promise<LinkedAgents> {
  const parts: AgentsModuleParts[] = [];
  for (const ref of refs) parts.push(await loadAgentsModule(ref));
  const agents = createAgentRegistry(parts.flatMap((part) => part.agents));
  const tools = createToolRegistry(parts.flatMap((part) => part.tools));
  return { setup: { agents, models, tools }, agentNames: agents.names() };
}
