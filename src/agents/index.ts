/** The built-in agents. Their tools come from the tool registry of each run (src/demo provides them). */
import { type Agent, type AgentRegistry, createAgentRegistry } from '../runtime/agent.js';
import { deployPipelineAgent, deployPipelineTask } from './deploy-pipeline.js';
import { flightBookingAgent, flightBookingTask } from './flight-booking.js';
import { DEPLOY_STEPS } from './tool-params.js';

export { deployPipelineAgent, deployPipelineTask } from './deploy-pipeline.js';
export { flightBookingAgent, flightBookingTask } from './flight-booking.js';
export * from './registry-tools.js';
export * from './tool-loop.js';
export * from './tool-params.js';

/**
 * One agent with both task types, to show several open tasks of different kinds in one session. With a
 * model that calls tools, it is a general tool-calling agent over the same tools instead.
 */
export const assistantAgent: Agent = {
  name: 'assistant',
  description: 'Books flights and deploys services.',
  taskTypes: [flightBookingTask, deployPipelineTask],
  tools: ['airline.book', ...DEPLOY_STEPS],
  greeting: {
    en: 'I can book flights and deploy services. What would you like to do?',
    zh: '我可以订机票和部署服务。请问需要做什么？',
  },
};

export const BUILTIN_AGENTS: readonly Agent[] = [flightBookingAgent, deployPipelineAgent, assistantAgent];

export function createBuiltinAgents(): AgentRegistry {
  return createAgentRegistry(BUILTIN_AGENTS);
}
