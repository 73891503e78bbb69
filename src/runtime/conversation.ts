/**
 * The conversation a model call sees, built by `buildContext` within `contextMaxTokens`: the agent's
 * description as instructions, the open tasks the turn loaded, the user's memory, the rolling summary and
 * the newest messages before this input. Built once per turn, and only for models that set `usesContext`
 * (the rules model does not), as a journal step: a resumed run replays the same conversation.
 */
import { buildContext } from '../context/build.js';
import { taskTypesFrom } from '../context/describe.js';
import type { JsonValue } from '../core/json.js';
import type { Task } from '../core/model.js';
import type { ConversationContext } from '../models/types.js';
import type { ProgramEnv } from './program.js';
import type { RunContext } from './run-context.js';

/** Default token budget of the built conversation. */
export const DEFAULT_CONTEXT_MAX_TOKENS = 4_000;

export async function conversationFor(
  rt: RunContext,
  env: ProgramEnv,
  tasks: readonly Task[],
): Promise<ConversationContext | null> {
  if (env.model.usesContext !== true) return null;
  const built = await rt.read('context', async () => {
    const context = await buildContext({
      store: rt.store,
      scope: rt.scope,
      sessionId: rt.header.session_id,
      maxTokens: env.contextMaxTokens,
      instructions: `${env.agent.description}`,
      tasks,
      taskTypes: taskTypesFrom(env.agent.taskTypes),
    });
    return { system: context.system, messages: context.messages } as unknown as JsonValue;
  });
  return built as unknown as ConversationContext;
}
