/**
 * The OpenAI Agents SDK `Session` over any agentstate store: `run(agent, input, { session })` keeps its
 * history as the messages of one agentstate session of the configured tenant and user, with the session's
 * sliding TTL. History transactions (`applyHistoryTransaction`) are one atomic commit of the messages and the
 * operation id, so a retried operation is applied once.
 */
import type {
  AgentInputItem,
  SessionHistoryTransactionArgs,
  SessionHistoryTransactionAwareSession,
} from '@openai/agents';
import { AgentStateError, invalidRequest, isAgentStateError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import type { JsonValue } from '../../core/json.js';
import type { Message, Session } from '../../core/model.js';
import type { Scope, StateStore } from '../../store/types.js';
import { checkItems, toItem, toMessage, withoutOrphanResults } from './items.js';
import { type HistoryState, stateOf, transactionHash, withState } from './state.js';

export interface AgentStateSessionOptions {
  readonly store: StateStore;
  readonly tenant_id: string;
  readonly user_id: string;
  /** An existing or chosen session id (`sess_` + 128 bits). Default: a new one. */
  readonly sessionId?: string;
  /** Sliding TTL of the session in seconds, renewed by every write. Default: the store's (30 minutes). */
  readonly ttlSeconds?: number;
  /** Recorded as the session's agent name. Default null. */
  readonly agent?: string | null;
}

const RETRIES = 8;

export class AgentStateSession implements SessionHistoryTransactionAwareSession {
  readonly store: StateStore;
  readonly scope: Scope;
  private id: string;
  private readonly ttl: number | undefined;
  private readonly agent: string | null;

  constructor(options: AgentStateSessionOptions) {
    const { tenant_id, user_id } = options;
    if (typeof tenant_id !== 'string' || tenant_id === '') {
      throw invalidRequest('[openai-agents] tenant_id must be a non-empty string');
    }
    if (typeof user_id !== 'string' || user_id === '') {
      throw invalidRequest('[openai-agents] user_id must be a non-empty string');
    }
    this.store = options.store;
    this.scope = { tenant_id, user_id };
    this.id = options.sessionId ?? newId('session');
    this.ttl = options.ttlSeconds;
    this.agent = options.agent ?? null;
  }

  async getSessionId(): Promise<string> {
    await this.ensure();
    return this.id;
  }

  async getItems(limit?: number): Promise<AgentInputItem[]> {
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 0)) {
      throw invalidRequest(`[openai-agents] limit must be an integer >= 0, got ${String(limit)}`);
    }
    if (limit === 0) return [];
    const session = await this.store.getSession(this.scope, this.id);
    if (session === null) return [];
    const hidden = new Set(stateOf(session).hidden);
    if (limit === undefined) return this.visible(await this.all(), hidden).map(([, item]) => item);
    // One more than needed, to know whether the window cuts the history (and may cut a tool exchange).
    const wanted = limit + hidden.size + 1;
    const messages =
      wanted <= 1000 ? await this.store.lastMessages(this.scope, this.id, wanted) : await this.all();
    const visible = this.visible(messages, hidden);
    const window = visible.slice(Math.max(0, visible.length - limit)).map(([, item]) => item);
    return visible.length > limit ? withoutOrphanResults(window) : window;
  }

  async addItems(items: AgentInputItem[]): Promise<void> {
    checkItems(items, 'items');
    if (items.length === 0) return;
    const messages = items.map(toMessage);
    try {
      await this.store.appendMessages(this.scope, this.id, messages);
    } catch (error) {
      if (!isAgentStateError(error, 'not_found')) throw error;
      await this.ensure();
      await this.store.appendMessages(this.scope, this.id, messages);
    }
  }

  async popItem(): Promise<AgentInputItem | undefined> {
    for (let attempt = 0; attempt < RETRIES; attempt++) {
      const session = await this.store.getSession(this.scope, this.id);
      if (session === null) return undefined;
      const state = stateOf(session);
      const hidden = new Set(state.hidden);
      const last = this.visible(
        await this.store.lastMessages(this.scope, this.id, hidden.size + 1),
        hidden,
      ).pop();
      if (last === undefined) return undefined;
      const [seq, item] = last;
      const next: HistoryState = { ...state, hidden: [...state.hidden, seq] };
      try {
        await this.store.updateSession(this.scope, this.id, session.version, {
          context: withState(session, next),
        });
        return item;
      } catch (error) {
        if (!isAgentStateError(error, 'version_conflict')) throw error;
      }
    }
    throw new AgentStateError('version_conflict', '[openai-agents] popItem: the session kept changing');
  }

  /** Removes the session and its messages; the next write starts it again, empty, under the same id. */
  async clearSession(): Promise<void> {
    await this.store.deleteSession(this.scope, this.id);
  }

  async applyHistoryTransaction(args: SessionHistoryTransactionArgs): Promise<void> {
    const { operationId, transaction } = checkTransaction(args);
    const hash = transactionHash(transaction as unknown as JsonValue);
    for (let attempt = 0; attempt < RETRIES; attempt++) {
      const session = await this.ensure();
      const state = stateOf(session);
      const applied = state.operations.find(([id]) => id === operationId);
      if (applied !== undefined) {
        if (applied[1] !== hash) {
          throw invalidRequest(
            `[openai-agents] history operation ${JSON.stringify(operationId)} was already applied with a different transaction`,
          );
        }
        return;
      }
      let hidden = state.hidden;
      let items: AgentInputItem[];
      if (transaction.type === 'append_items') {
        items = transaction.items;
      } else {
        const suffix = await this.suffix(session, transaction.expectedSuffix.length);
        if (
          suffix === null ||
          transactionHash(suffix.map(([, i]) => i) as unknown as JsonValue) !==
            transactionHash(transaction.expectedSuffix as unknown as JsonValue)
        ) {
          throw invalidRequest('[openai-agents] the session history no longer ends with the expected suffix');
        }
        hidden = [...hidden, ...suffix.map(([seq]) => seq)];
        items = transaction.replacement;
      }
      const next: HistoryState = { hidden, operations: [...state.operations, [operationId, hash]] };
      try {
        await this.store.commitTurn(this.scope, {
          session: {
            id: this.id,
            expected_version: session.version,
            patch: { context: withState(session, next) },
          },
          ...(items.length > 0 ? { messages: { session_id: this.id, items: items.map(toMessage) } } : {}),
        });
        return;
      } catch (error) {
        if (!isAgentStateError(error, 'version_conflict')) throw error;
      }
    }
    throw new AgentStateError(
      'version_conflict',
      '[openai-agents] history transaction: the session kept changing',
    );
  }

  /**
   * The session, created under this id (with the TTL) when it does not exist. When the id exists but is
   * not visible (it expired and is not swept yet, or belongs to another user), the conversation starts
   * again under a new id: an expired session is gone, and another user's is never touched.
   * `getSessionId()` returns the id in use.
   */
  private async ensure(): Promise<Session> {
    const existing = await this.store.getSession(this.scope, this.id);
    if (existing !== null) return existing;
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        return await this.store.createSession(this.scope, {
          id: this.id,
          agent: this.agent,
          ...(this.ttl === undefined ? {} : { ttl_seconds: this.ttl }),
        });
      } catch (error) {
        if (!isAgentStateError(error, 'conflict')) throw error;
        const raced = await this.store.getSession(this.scope, this.id);
        if (raced !== null) return raced;
        this.id = newId('session');
      }
    }
    throw new AgentStateError('conflict', '[openai-agents] could not create the session');
  }

  private async all(): Promise<Message[]> {
    const out: Message[] = [];
    let after = 0;
    for (;;) {
      const page = await this.store.listMessages(this.scope, this.id, { after_seq: after, limit: 1000 });
      out.push(...page);
      const last = page[page.length - 1];
      if (page.length < 1000 || last === undefined) return out;
      after = last.seq;
    }
  }

  private visible(messages: readonly Message[], hidden: ReadonlySet<number>): [number, AgentInputItem][] {
    const out: [number, AgentInputItem][] = [];
    for (const message of messages) {
      if (hidden.has(message.seq)) continue;
      const item = toItem(message);
      if (item !== null) out.push([message.seq, item]);
    }
    return out;
  }

  /** The last `n` visible items with their seqs; null when there are fewer. */
  private async suffix(session: Session, n: number): Promise<[number, AgentInputItem][] | null> {
    if (n === 0) return [];
    const hidden = new Set(stateOf(session).hidden);
    const visible = this.visible(await this.store.lastMessages(this.scope, this.id, n + hidden.size), hidden);
    return visible.length < n ? null : visible.slice(visible.length - n);
  }
}

function checkTransaction(args: SessionHistoryTransactionArgs): SessionHistoryTransactionArgs {
  if (typeof args !== 'object' || args === null)
    throw invalidRequest('[openai-agents] transaction arguments are required');
  const { operationId, transaction } = args;
  if (typeof operationId !== 'string' || operationId.trim() === '') {
    throw invalidRequest('[openai-agents] operationId must be a non-empty string');
  }
  if (typeof transaction !== 'object' || transaction === null) {
    throw invalidRequest('[openai-agents] transaction must be an object');
  }
  if (transaction.type === 'append_items') {
    checkItems(transaction.items, 'transaction.items');
  } else if (transaction.type === 'replace_suffix') {
    checkItems(transaction.expectedSuffix, 'transaction.expectedSuffix');
    checkItems(transaction.replacement, 'transaction.replacement');
  } else {
    throw invalidRequest(
      `[openai-agents] unsupported transaction type ${JSON.stringify((transaction as { type?: unknown }).type)}`,
    );
  }
  return { operationId, transaction };
}
