/** An agent: its task types and what it says when an input belongs to none of them. Looked up by name. */
import { invalidRequest } from '../core/errors.js';
import type { JsonValue } from '../core/json.js';
import type { DurableContext } from '../durable/types.js';
import type { Language, Model } from '../models/types.js';
import type { TaskType } from './task-type.js';
import type { ToolRegistry } from './tool.js';

/** What an agent's code gets besides its durable context: the turn's model and the tools it may call. */
export interface AgentRunEnv {
  readonly model: Model;
  readonly tools: ToolRegistry;
}

/**
 * An agent's code on the durable kernel. It takes the user's input with `ctx.waitForInput()` (a turn's
 * input is taken by the first call that waits); a later `waitForInput` ends the turn with its prompt as
 * the reply, and the session's next turn brings the answer, on any instance. What it returns is the
 * reply: a string, or an object whose `reply` is one.
 */
export type AgentCode = (ctx: DurableContext, env: AgentRunEnv) => Promise<JsonValue>;

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
  /** Code on the durable kernel that runs the agent's turns (kernel-program.ts); `taskTypes` may be empty. */
  readonly run?: AgentCode;
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
