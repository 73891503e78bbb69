export {
  type DurableToolOptions,
  durableModel,
  durableTools,
  idempotencyKeyOf,
  type ToolDetails,
} from './durable.js';
export { AgentStateSession, type AgentStateSessionOptions } from './session.js';
