/** The models behind extraction, routing and replies: `rules` (offline, the default) and `openai`. */
export type { OpenAIConfig, OpenAIModelOptions } from './openai/index.js';
export { createOpenAIModel } from './openai/index.js';
export { createRulesModel } from './rules/index.js';
export type {
  ConversationContext,
  Extraction,
  ExtractRequest,
  Language,
  Model,
  ModelRegistry,
  OpenTaskInfo,
  ReplyRequest,
  RouteDecision,
  RouteRequest,
  SlotHint,
  SlotInfo,
  TaskTypeInfo,
} from './types.js';
export { createModelRegistry } from './types.js';
