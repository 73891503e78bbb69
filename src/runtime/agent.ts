/** An agent: its task types and what it says when an input belongs to none of them. Looked up by name. */
import { invalidRequest } from '../core/errors.js';
import type { Language } from '../models/types.js';
import type { TaskType } from './task-type.js';

export interface Agent {
  readonly name: string;
  readonly description: string;
  readonly taskTypes: readonly TaskType[];
  /** Said when the input starts nothing and belongs to no open task. */
  readonly greeting: Readonly<Record<Language, string>>;
  /**
   * Tools of the run's tool registry the agent may call itself: when its model calls tools (`Model.chat`),
   * its turns are a tool loop over them (tool-program.ts) instead of its task types' slot filling.
   */
  readonly tools?: readonly string[];
}

export interface AgentRegistry {
  get(name: string): Agent | undefined;
  names(): string[];
}

export function createAgentRegistry(agents: Iterable<Agent>): AgentRegistry {
  const byName = new Map<string, Agent>();
  for (const agent of agents) {
    if (byName.has(agent.name)) throw invalidRequest(`agent registry: two agents are named ${agent.name}`);
    byName.set(agent.name, agent);
  }
  return { get: (name) => byName.get(name), names: () => [...byName.keys()].sort() };
}

export function taskTypeOf(agent: Agent, name: string): TaskType | undefined {
  return agent.taskTypes.find((type) => type.name === name);
}
