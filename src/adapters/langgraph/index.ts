export {
  type ChatModelLike,
  type DurableToolOptions,
  durableModel,
  durableTools,
  idempotencyKeyOf,
} from './durable.js';
export { AgentStateSaver, type AgentStateSaverOptions } from './saver.js';
