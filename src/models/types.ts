/**
 * The one small interface every model implements: extract (intent, slots, yes/no, cancel), route (which open
 * task an input belongs to), reply (turn a drafted answer into the words the user reads).
 * Requests and answers are plain JSON, so the runtime records every answer and replays it on resume.
 */
import type { ChatMessage } from '../context/chat-format.js';
import type { JsonObject } from '../core/json.js';
import type { TaskState } from '../core/model.js';

export type Language = 'en' | 'zh';

/** How the rules model finds a slot's value in text. Plain data, so other models can read it too. */
export type SlotHint =
  | { readonly kind: 'city'; readonly role: 'origin' | 'destination' }
  | { readonly kind: 'date' }
  | { readonly kind: 'enum'; readonly values: Readonly<Record<string, readonly string[]>> }
  | { readonly kind: 'person_name' }
  | { readonly kind: 'identifier'; readonly after: readonly string[] }
  | { readonly kind: 'version' };

export interface SlotInfo {
  readonly name: string;
  readonly description: string;
  readonly required: boolean;
  readonly hint: SlotHint;
}

export interface TaskTypeInfo {
  readonly name: string;
  readonly description: string;
  /** Words that show the intent to start a task of this type (English and Chinese). */
  readonly keywords: readonly string[];
  readonly slots: readonly SlotInfo[];
}

export interface OpenTaskInfo {
  readonly id: string;
  readonly type: string;
  readonly state: TaskState;
  readonly slots: JsonObject;
  readonly missing: readonly string[];
  readonly status_line: string;
  readonly updated_at: string;
}

/**
 * The conversation a model sees, from `buildContext`: the system text (instructions, open tasks, the
 * user's memory, the rolling summary) and the newest messages before this input, within a token budget.
 * Given only to models that set `usesContext`.
 */
export interface ConversationContext {
  readonly system: string;
  readonly messages: readonly ChatMessage[];
}

export interface ExtractRequest {
  readonly input: string;
  /** The conversation so far (models with `usesContext` only). */
  readonly context?: ConversationContext;
  readonly taskTypes: readonly TaskTypeInfo[];
  /** The slot the conversation is waiting for, when a task is in focus. */
  readonly expecting: { readonly type: string; readonly slot: string } | null;
  /** The instant of the turn (ISO-8601 UTC) and the user's time zone, for relative dates. */
  readonly now: string;
  readonly timezone: string;
  readonly language: Language;
}

export interface Extraction {
  /** The task type the input asks to start, or null. */
  readonly intent: string | null;
  /** Slot values found, by task type name. Values are not validated yet. */
  readonly slots: Readonly<Record<string, JsonObject>>;
  readonly answer: 'yes' | 'no' | null;
  readonly cancel: boolean;
  /** The input asks for another task of a type ("another", "再"), not a change of an open one. */
  readonly another: boolean;
}

export interface RouteRequest {
  readonly input: string;
  readonly extraction: Extraction;
  readonly tasks: readonly OpenTaskInfo[];
  readonly taskTypes: readonly TaskTypeInfo[];
}

export interface RouteDecision {
  /** The open task the input belongs to, or null. */
  readonly task_id: string | null;
  /** A task type to start, when the input belongs to no open task. */
  readonly new_task_type: string | null;
  readonly reason: string;
}

export interface ReplyRequest {
  readonly input: string;
  /** The conversation so far (models with `usesContext` only). */
  readonly context?: ConversationContext;
  readonly language: Language;
  /** What the runtime decided to say; a model may reword it but must keep every fact. */
  readonly draft: string;
  readonly task: OpenTaskInfo | null;
  /**
   * Called with each piece of the reply as the model produces it, in order (their concatenation is the
   * reply it returns, before any trimming): what a run's `message.delta` events carry. A model that does
   * not stream calls it once with the whole reply.
   */
  readonly onDelta?: (text: string) => void;
}

/** A tool as a model that calls tools sees it. */
export interface ToolSpec {
  /** 1 to 64 letters, digits, `_` or `-`. */
  readonly name: string;
  readonly description: string;
  /** The JSON Schema of its parameters. */
  readonly parameters: JsonObject;
}

/** One request of a model that calls tools: the conversation so far (Chat Completions messages). */
export interface ToolChatRequest {
  readonly messages: readonly JsonObject[];
  readonly tools: readonly ToolSpec[];
  /** Called with each piece of the answer's text as it arrives (see ReplyRequest.onDelta). */
  readonly onDelta?: (text: string) => void;
}

/** What the model answers: its text, and the tool calls it asks for (arguments as JSON text). */
export interface ToolChatAnswer {
  readonly content: string | null;
  readonly tool_calls: { readonly id: string; readonly name: string; readonly arguments: string }[];
}

export interface Model {
  readonly name: string;
  /** True when the model wants the conversation (`context` in extract and reply requests). */
  readonly usesContext?: boolean;
  extract(request: ExtractRequest): Promise<Extraction>;
  route(request: RouteRequest): Promise<RouteDecision>;
  reply(request: ReplyRequest): Promise<string>;
  /**
   * Present on a model that calls tools: one answer to a conversation that offers tools. An agent with
   * tools runs its turns as a tool loop on such a model (runtime/tool-program.ts).
   */
  chat?(request: ToolChatRequest): Promise<ToolChatAnswer>;
}

/** Models by name; looked up again when a run resumes. */
export interface ModelRegistry {
  get(name: string): Model | undefined;
}

export function createModelRegistry(models: Iterable<Model>): ModelRegistry {
  const byName = new Map<string, Model>();
  for (const model of models) byName.set(model.name, model);
  return { get: (name) => byName.get(name) };
}
