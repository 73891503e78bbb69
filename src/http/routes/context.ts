/**
 * `GET /v1/sessions/{id}/context?max_tokens`: what one model call of the session would see. The runtime's
 * context builder answers when the server has one; otherwise a plain fallback: a system line naming the
 * open tasks, then the newest messages that fit the token budget, oldest first.
 */
import { countTokens } from 'gpt-tokenizer';
import { type Message, OPEN_TASK_STATES, type Session } from '../../core/model.js';
import type { ReadScope, StateStore } from '../../store/types.js';
import { readScopeOf } from '../auth.js';
import type { RouteDeps, ZodApp } from '../deps.js';
import { SessionParams } from '../schemas.js';
import { ContextResponseSchema } from '../turn-runner.js';
import { ERRORS, requireSession } from './common.js';

const DEFAULT_MAX_TOKENS = 4000;
const FALLBACK_MESSAGES = 200;

async function fallbackContext(store: StateStore, scope: ReadScope, session: Session, maxTokens: number) {
  const tasks = await store.listTasks(scope, { session_id: session.id, state: OPEN_TASK_STATES, limit: 20 });
  const lines = tasks.items.map((t) => `- ${t.type} [${t.state}] ${t.status_line}`);
  const system =
    lines.length === 0 ? 'No open tasks.' : `Open tasks of this conversation:\n${lines.join('\n')}`;
  let tokens = countTokens(system);
  const recent = await store.lastMessages(scope, session.id, FALLBACK_MESSAGES);
  const kept: Message[] = [];
  for (let i = recent.length - 1; i >= 0; i--) {
    const message = recent[i] as Message;
    const cost = countTokens(message.content) + 4;
    if (tokens + cost > maxTokens) break;
    tokens += cost;
    kept.unshift(message);
  }
  const messages = kept.map((m) => ({ role: m.role, content: m.content, seq: m.seq }));
  return { system, messages, token_count: tokens };
}

export function contextRoutes(app: ZodApp, { store, schemas, turns }: RouteDeps): void {
  app.get(
    '/v1/sessions/:id/context',
    {
      schema: {
        tags: ['turns'],
        params: SessionParams,
        querystring: schemas.context,
        response: { 200: ContextResponseSchema, ...ERRORS },
      },
    },
    async (request) => {
      const scope = readScopeOf(request.principal);
      const session = await requireSession(store, scope, request.params.id);
      const maxTokens = request.query.max_tokens ?? DEFAULT_MAX_TOKENS;
      if (turns?.context) return turns.context(scope, session, maxTokens);
      return fallbackContext(store, scope, session, maxTokens);
    },
  );
}
