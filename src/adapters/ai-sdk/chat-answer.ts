/**
 * A chat turn's answer as a durable run: the chat store's `answer` function runs inside `durableRun`, one
 * run per turn, keyed by the turn's id, so its model answers are recorded steps and its tool calls actions
 * with idempotency keys (`durableModel`, `durableTools`); the answer's chunks go to the turn's stream.
 */
import type { UIMessage, UIMessageChunk } from 'ai';
import { durableRun } from '../../durable/run.js';
import type { ChatAnswer, ChatEnv } from './chat-session.js';

/** The name of a chat turn's durable run (its task's type). */
export const CHAT_RUN_NAME = 'ai_sdk_chat';

export interface DurableAnswerInit {
  readonly env: ChatEnv;
  readonly chatId: string;
  /** The turn's id: the key of its durable run, the same in every attempt. */
  readonly turnId: string;
  readonly messages: UIMessage[];
  readonly answer: ChatAnswer;
  /** Where the answer's chunks go (the turn's stream reads the other end). */
  readonly into: WritableStream<UIMessageChunk>;
}

/** The session lease a turn's run holds: renewed every second at most, so it must last a few of those. */
function runLease(env: ChatEnv) {
  const ttlMs = Math.max(3_000, env.leaseMs);
  return { ttlMs, waitMs: ttlMs + 1_000 };
}

/** Runs the turn's answer as its durable run, its chunks into `into`; errors end `into`. */
export async function answerDurably(init: DurableAnswerInit): Promise<void> {
  const { env, chatId, turnId, into } = init;
  let called = false;
  try {
    const outcome = await durableRun(
      env.store,
      { scope: env.scope, sessionId: chatId, name: CHAT_RUN_NAME, key: turnId, lease: runLease(env) },
      async (ctx) => {
        called = true;
        const source = await init.answer({ ctx, chatId, messages: init.messages });
        await source.pipeTo(into);
        return null;
      },
    );
    if (!called) throw new Error(`the run of turn ${turnId} had ended already (${outcome.status})`);
    if (outcome.status === 'blocked')
      throw new Error(`the answer waits for action ${outcome.action_id} to be resolved: ${outcome.note}`);
  } catch (error) {
    await into.abort(error).catch(() => undefined);
  }
}
