/**
 * buildContext: what one model call sees, built within a token budget (SPEC 1 "Context", SPEC 4).
 *
 * Filled in this order of priority: (1) the agent's instructions and the state of the session's open tasks
 * (never a summary of the chat); (2) the user's long-term memory (`preferences`, `facts`), most recently
 * updated first; (3) the newest messages, walking backwards in pages, tool calls kept whole with their
 * results; (4) with what is left, the session's rolling summary, which stands in for every message it
 * covers, and a note of any range neither shown nor summarized. `token_count` is exactly
 * `countChat(tokenizer, system, messages)` and never exceeds `maxTokens`.
 *
 * Reads: the session, one page of open tasks, one page per memory namespace, the summary head (one key),
 * and messages backwards from the newest in growing pages until the budget is spent. Nothing else, so the
 * cost follows the window, not the length of the history.
 */
import { AgentStateError, invalidRequest } from '../core/errors.js';
import type { MemoryItem, Message, Task } from '../core/model.js';
import { OPEN_TASK_STATES } from '../core/model.js';
import { CONTEXT_NAMESPACES } from '../memory/namespaces.js';
import type { ReadScope, Scope, StateStore } from '../store/types.js';
import { type ChatMessage, countMessage, REPLY_PRIMING_TOKENS, toChatMessage } from './chat-format.js';
import { describeTasks, type TaskTypes } from './describe.js';
import { storedMessageTokens } from './message-tokens.js';
import {
  earlierSection,
  joinSections,
  memoryLine,
  memorySection,
  type OmittedRange,
  rankMemory,
} from './sections.js';
import { storeMessageSource } from './source.js';
import { readLineSummaryHead, type SummaryRecord } from './summary-store.js';
import { loadTokenizer, type Tokenizer } from './tokenizer.js';
import { selectWindow } from './window.js';

export interface BuildContextOptions {
  readonly store: StateStore;
  readonly scope: ReadScope;
  readonly sessionId: string;
  readonly maxTokens: number;
  /** A tokenizer, or the name of an encoding (`o200k_base`, `cl100k_base`) or model. Default o200k_base. */
  readonly tokenizer?: Tokenizer | string;
  /** The agent's own system prompt, placed first. Default none. */
  readonly instructions?: string;
  /** The open tasks to describe. Default: the session's open tasks, read from the store. */
  readonly tasks?: readonly Task[];
  /** Per task type: required slots and an optional describe function. */
  readonly taskTypes?: TaskTypes;
  /** Memory items to offer; `false` for none. Default: the user's `memoryNamespaces`, read from the store. */
  readonly memory?: readonly MemoryItem[] | false;
  /** Default `preferences` and `facts`. */
  readonly memoryNamespaces?: readonly string[];
  /** Items read per namespace. Default 50. */
  readonly memoryLimit?: number;
  /** Use the session's compaction summary. Default true. */
  readonly summaries?: boolean;
  /** First page of messages read backwards. Default 32. */
  readonly pageSize?: number;
}

export interface ContextIncluded {
  readonly tokenizer: string;
  readonly max_tokens: number;
  readonly tasks: string[];
  readonly memory: { namespace: string; key: string }[];
  readonly memory_omitted: number;
  readonly summary: { from_seq: number; to_seq: number; points_shown: number; points_total: number } | null;
  readonly messages: { first_seq: number; last_seq: number; count: number } | null;
  readonly omitted: OmittedRange | null;
  readonly orphan_tool_results: number[];
  /** Messages read from the store to build this window. */
  readonly messages_read: number;
}

export interface BuiltContext {
  readonly system: string;
  readonly messages: ChatMessage[];
  readonly token_count: number;
  readonly included: ContextIncluded;
}

async function resolveTokenizer(value: Tokenizer | string | undefined): Promise<Tokenizer> {
  if (value === undefined || typeof value === 'string') return loadTokenizer(value);
  return value;
}

async function readMemory(
  store: StateStore,
  scope: Scope,
  options: BuildContextOptions,
): Promise<MemoryItem[]> {
  if (options.memory === false) return [];
  if (options.memory !== undefined) return [...options.memory];
  const limit = options.memoryLimit ?? 50;
  const pages = await Promise.all(
    (options.memoryNamespaces ?? CONTEXT_NAMESPACES).map((ns) => store.listMemory(scope, ns, { limit })),
  );
  return pages.flatMap((p) => p.items);
}

function validate(options: BuildContextOptions): void {
  if (!Number.isInteger(options.maxTokens) || options.maxTokens < 1) {
    throw invalidRequest(`max_tokens must be a positive integer, got ${String(options.maxTokens)}`, {
      field: 'max_tokens',
    });
  }
  if (typeof options.sessionId !== 'string' || options.sessionId === '') {
    throw invalidRequest('session id is required', { field: 'session_id' });
  }
}

export async function buildContext(options: BuildContextOptions): Promise<BuiltContext> {
  validate(options);
  const { store, scope, sessionId, maxTokens } = options;
  const session = await store.getSession(scope, sessionId);
  if (session === null) throw new AgentStateError('not_found', `session ${sessionId} not found`);
  const userScope: Scope = { tenant_id: session.tenant_id, user_id: session.user_id };
  const tokenizer = await resolveTokenizer(options.tokenizer);
  const systemCost = (text: string) =>
    text === '' ? 0 : countMessage(tokenizer, { role: 'system', content: text });

  const [tasks, memory, head] = await Promise.all([
    options.tasks !== undefined
      ? Promise.resolve([...options.tasks])
      : store
          .listTasks(scope, { session_id: sessionId, state: OPEN_TASK_STATES, limit: 50 })
          .then((p) => p.items),
    readMemory(store, userScope, options),
    options.summaries === false ? Promise.resolve(null) : readLineSummaryHead(store, userScope, session),
  ]);

  // (1) instructions and task state: must fit.
  const base = joinSections([options.instructions ?? '', describeTasks(tasks, options.taskTypes)]);
  const needed = REPLY_PRIMING_TOKENS + systemCost(base);
  if (needed > maxTokens) {
    throw invalidRequest(
      `max_tokens ${maxTokens} is below the ${needed} tokens the instructions and open tasks need`,
      {
        field: 'max_tokens',
        needed,
      },
    );
  }

  // (2) memory, most recent first, while it fits (estimated per line, then checked exactly).
  const ranked = rankMemory(memory);
  const lines: string[] = [];
  const shownItems: MemoryItem[] = [];
  let estimate = needed + (ranked.length > 0 ? tokenizer.count(`\n\n${memorySection(['x'])}`) : 0);
  for (const item of ranked) {
    const line = memoryLine(item);
    const cost = tokenizer.count(`${line}\n`);
    if (estimate + cost > maxTokens) break;
    estimate += cost;
    lines.push(line);
    shownItems.push(item);
  }
  let withMemory = joinSections([base, memorySection(lines)]);
  while (lines.length > 0 && REPLY_PRIMING_TOKENS + systemCost(withMemory) > maxTokens) {
    lines.pop();
    shownItems.pop();
    withMemory = joinSections([base, memorySection(lines)]);
  }
  const fixed = REPLY_PRIMING_TOKENS + systemCost(withMemory);

  // (3) the newest messages.
  const floor = head?.to_seq ?? 0;
  const window = await selectWindow(storeMessageSource(store, scope, sessionId), {
    budget: maxTokens - fixed,
    cost: (m: Message) => storedMessageTokens(tokenizer, m),
    floor,
    ...(options.pageSize === undefined ? {} : { pageSize: options.pageSize }),
  });
  const messages = window.messages.map(toChatMessage);

  // (4) the summary and the note of what was cut, with what is left.
  const omitted: OmittedRange | null =
    window.cut_to === null ? null : { from_seq: floor + 1, to_seq: window.cut_to };
  const fit = fitEarlier(tokenizer, withMemory, window.tokens, maxTokens, head, omitted);

  const first = window.messages[0];
  const last = window.messages[window.messages.length - 1];
  return {
    system: fit.system,
    messages,
    token_count: fit.tokens,
    included: {
      tokenizer: tokenizer.name,
      max_tokens: maxTokens,
      tasks: tasks.map((t) => t.id),
      memory: shownItems.map((i) => ({ namespace: i.namespace, key: i.key })),
      memory_omitted: memory.length - shownItems.length,
      summary:
        head === null
          ? null
          : {
              from_seq: head.from_seq,
              to_seq: head.to_seq,
              points_shown: fit.points,
              points_total: head.points.length,
            },
      messages:
        first === undefined || last === undefined
          ? null
          : { first_seq: first.seq, last_seq: last.seq, count: window.messages.length },
      omitted: fit.noted ? omitted : null,
      orphan_tool_results: window.orphans,
      messages_read: window.read,
    },
  };
}

/**
 * Adds as much of the "earlier" section as fits: the omission note first, then the newest summary points.
 * Checked with an exact count of the whole request; falls back to what was already measured to fit.
 */
function fitEarlier(
  tokenizer: Tokenizer,
  prefix: string,
  messageTokens: number,
  maxTokens: number,
  head: SummaryRecord | null,
  omitted: OmittedRange | null,
): { system: string; tokens: number; points: number; noted: boolean } {
  const measure = (points: readonly string[], note: OmittedRange | null) => {
    const system = joinSections([prefix, earlierSection(head, points, note)]);
    // countChat is a sum over messages, so the window's own total can be added as it is.
    const tokens =
      REPLY_PRIMING_TOKENS + countMessage(tokenizer, { role: 'system', content: system }) + messageTokens;
    return { system, tokens };
  };
  const bare = measure([], null);
  if (head === null && omitted === null) return { ...bare, points: 0, noted: false };
  const noted = omitted === null ? bare : measure([], omitted);
  if (noted.tokens > maxTokens) return { ...bare, points: 0, noted: false };
  const all = head?.points ?? [];
  // Binary search on how many of the newest points fit: the count only grows with more points.
  let lo = 0;
  let hi = all.length;
  let best = { ...noted, points: 0 };
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    const tried = measure(all.slice(all.length - mid), omitted);
    if (tried.tokens <= maxTokens) {
      lo = mid;
      best = { ...tried, points: mid };
    } else {
      hi = mid - 1;
    }
  }
  return { ...best, noted: omitted !== null };
}
