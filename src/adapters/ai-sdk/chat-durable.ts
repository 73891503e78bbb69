/**
 * Durable chat turns: a turn's answer (`ChatTurn.answer`, the chat store's `answer` function) runs inside
 * `durableRun`, one run per turn, keyed by the turn's id, so its model answers are recorded steps and its
 * tool calls actions with idempotency keys (`durableModel`, `durableTools`).
 *
 * A turn whose process died (its chat lease ran out with no final event in its stream) is resumed rather
 * than cut off: a new stream of the chat (a new run in the run event log) runs the same durable run again,
 * which replays the recorded model answers and recovers an interrupted tool call through its `lookup`, and
 * goes on to the end of the answer. The dead stream ends with `run.failed` naming its continuation
 * (`continued_by`), so a follower of it goes on reading the new one.
 */
import { generateId, type UIMessage, type UIMessageChunk } from 'ai';
import { newId } from '../../core/ids.js';
import type { JsonObject } from '../../core/json.js';
import { isFinalRunEvent } from '../../core/model.js';
import { keyedTaskId } from '../../durable/header.js';
import { answerDurably, CHAT_RUN_NAME } from './chat-answer.js';
import { allRunEvents, chunksOf } from './chat-log.js';
import { storedMessages } from './chat-recover.js';
import { type ChatEnv, LeaseKeeper, leaseName, setActiveStream } from './chat-session.js';
import { ChatTurn } from './chat-turn.js';

/** Whether the turn's durable run is open: it has a task, still EXECUTING. */
async function openRun(env: ChatEnv, chatId: string, turnId: string): Promise<boolean> {
  const task = await env.store.getTask(env.scope, keyedTaskId(env.scope, chatId, CHAT_RUN_NAME, turnId));
  return task !== null && task.state === 'EXECUTING';
}

function isMessage(value: unknown): value is UIMessage {
  return typeof value === 'object' && value !== null && Array.isArray((value as UIMessage).parts);
}

/**
 * What the dead stream `runId` was: its turn (null when it was not a durable turn that is still open),
 * the messages it answered, and the id of its answer's message.
 */
async function deadTurn(env: ChatEnv, chatId: string, runId: string) {
  const events = await allRunEvents(env.store, env.scope, chatId, runId);
  if (events.some((event) => isFinalRunEvent(event.type))) return null;
  const started = (events.find((event) => event.type === 'run.started')?.data ?? {}) as JsonObject;
  const turnId = typeof started.turn_id === 'string' ? started.turn_id : null;
  if (turnId === null || !(await openRun(env, chatId, turnId))) return null;
  const continues = isMessage(started.continues) ? started.continues : null;
  const history = await storedMessages(env, chatId);
  const answers = continues?.id ?? (typeof started.answers === 'string' ? started.answers : null);
  const at = history.findIndex((message) => message.id === answers);
  if (at < 0) return null;
  const messages = continues === null ? history.slice(0, at + 1) : [...history.slice(0, at), continues];
  const first = events.flatMap(chunksOf).find((chunk) => chunk.type === 'start');
  const messageId =
    continues?.id ?? history[at + 1]?.id ?? (first?.type === 'start' ? first.messageId : undefined);
  return { turnId, continues, messages, messageId };
}

/**
 * Resumes the durable turn of the chat's dead stream `runId` as a new stream; null when there is nothing to
 * resume (the writer lives, the stream ended, or it was no durable turn).
 */
export async function resumeDurableTurn(
  env: ChatEnv,
  chatId: string,
  runId: string,
): Promise<ChatTurn | null> {
  const answer = env.answer;
  if (answer === undefined) return null;
  const next = newId('run');
  if ((await env.store.acquireLease(env.scope, leaseName(chatId), next, env.leaseMs)) === null) return null;
  const keeper = new LeaseKeeper(env, chatId, next);
  try {
    const dead = await deadTurn(env, chatId, runId);
    if (dead === null) {
      await keeper.release();
      return null;
    }
    const { turnId, continues, messages, messageId } = dead;
    await env.store.appendRunEvents(env.scope, {
      session_id: chatId,
      run_id: next,
      events: [
        {
          type: 'run.started',
          data: {
            chat_id: chatId,
            continues,
            turn_id: turnId,
            resumes: runId,
            answers: messages.at(-1)?.id ?? null,
          },
        },
      ],
    });
    await setActiveStream(env, chatId, next);
    await env.store.appendRunEvents(env.scope, {
      session_id: chatId,
      run_id: runId,
      events: [
        {
          type: 'run.failed',
          data: {
            chat_id: chatId,
            reason: 'the stream stopped: the process writing it ended; its turn goes on',
            continued_by: next,
          },
        },
      ],
    });
    const turn = new ChatTurn({
      env,
      chatId,
      runId: next,
      turnId,
      messages,
      savedParts: continues === null ? [] : continues.parts,
      lease: keeper,
    });
    const pipe = new TransformStream<UIMessageChunk, UIMessageChunk>();
    const id = messageId ?? generateId();
    // No client reads this stream: followers read the run event log.
    void turn.stream(pipe.readable, { generateMessageId: () => id }).cancel();
    void answerDurably({ env, chatId, turnId, messages, answer, into: pipe.writable });
    return turn;
  } catch (error) {
    await keeper.release().catch(() => undefined);
    throw error;
  }
}
