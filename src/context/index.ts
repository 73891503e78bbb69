export {
  type BuildContextOptions,
  type BuiltContext,
  buildContext,
  type ContextIncluded,
} from './build.js';
export {
  type ChatMessage,
  type ChatToolCall,
  countChat,
  countMessage,
  REPLY_PRIMING_TOKENS,
  TOKENS_PER_MESSAGE,
  toChatMessage,
  toChatRequestMessages,
} from './chat-format.js';
export { type CompactOptions, maybeCompact } from './compact.js';
export {
  describeTask,
  describeTaskGeneric,
  describeTasks,
  missingSlots as missingTaskSlots,
  nextStep as describeNextStep,
  type TaskTypeInfo as ContextTaskTypeInfo,
  type TaskTypes,
  taskTypesFrom,
} from './describe.js';
export { type OpenAiSummarizerOptions, openaiSummarizer } from './openai-summarizer.js';
export { arrayMessageSource, type MessageSource, storeMessageSource } from './source.js';
export {
  type RulesSummarizerOptions,
  rulesSummarizer,
  type SummarizeInput,
  type Summarizer,
} from './summarizer.js';
export {
  listSummaries,
  readSummaryHead,
  SUMMARY_NAMESPACE_PREFIX,
  type SummaryRecord,
  summaryKey,
  summaryNamespace,
  writeSummary,
} from './summary-store.js';
export {
  DEFAULT_ENCODING,
  ENCODINGS,
  type EncodingName,
  encodingForModel,
  loadedTokenizer,
  loadTokenizer,
  type Tokenizer,
  UTF8_BYTES_BOUND,
} from './tokenizer.js';
export { type MessageWindow, selectWindow, type WindowOptions } from './window.js';
