/**
 * A stream whose writer died (a crash, a killed process: its lease ran out without a final event). Its
 * chunks are in the run event log; the steps it finished are already the chat's messages. Recovery
 * rebuilds the answer from the chunks, saves what no step saved in a form the next model call accepts
 * (closeCutOffParts: no dangling tool call), ends the run's log with `run.failed` and clears the chat's
 * active stream, so a follower ends and the next turn starts from a sound history.
 */
import { readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';
import { isFinalRunEvent } from '../../core/model.js';
import { saveWithApprovals } from './chat-approvals.js';
import { allRunEvents, chunkEvent, chunksOf } from './chat-log.js';
import { closeCutOffParts, firstChange, foldRecords, hasContent, toRecord } from './chat-records.js';
import { type ChatEnv, leaseName, setActiveStream } from './chat-session.js';

/** The chat's messages as stored now (every record, folded). */
export async function storedMessages(env: ChatEnv, chatId: string): Promise<UIMessage[]> {
  const records = [];
  let after = 0;
  for (;;) {
    const page = await env.store.listMessages(env.scope, chatId, { after_seq: after, limit: 1000 });
    records.push(...page);
    if (page.length < 1000) return foldRecords(records);
    after = page.at(-1)?.seq ?? after;
  }
}

function isMessage(value: unknown): value is UIMessage {
  return typeof value === 'object' && value !== null && Array.isArray((value as UIMessage).parts);
}

async function rebuild(chunks: UIMessageChunk[], base: UIMessage | undefined): Promise<UIMessage | null> {
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
  let last: UIMessage | null = null;
  for await (const message of readUIMessageStream({
    stream,
    ...(base === undefined ? {} : { message: base }),
    terminateOnError: false,
    onError: () => undefined,
  }))
    last = message;
  return last;
}

/** Recovers the run; the caller holds the chat's lease. */
export async function recoverHeld(env: ChatEnv, chatId: string, runId: string): Promise<void> {
  const events = await allRunEvents(env.store, env.scope, chatId, runId);
  if (!events.some((event) => isFinalRunEvent(event.type))) {
    const started = events.find((event) => event.type === 'run.started');
    const base = started?.data.continues;
    const message = await rebuild(events.flatMap(chunksOf), isMessage(base) ? base : undefined);
    if (message !== null) {
      const saved = (await storedMessages(env, chatId)).find((m) => m.id === message.id);
      const from = firstChange(saved?.parts ?? [], message.parts);
      const tail = closeCutOffParts(message.parts.slice(from));
      if (hasContent(tail))
        await saveWithApprovals(env, chatId, message.id, toRecord(message, from, tail), tail);
    }
    await env.store.appendRunEvents(env.scope, {
      session_id: chatId,
      run_id: runId,
      events: [
        chunkEvent([{ type: 'abort', reason: 'the stream stopped: the process writing it ended' }]),
        {
          type: 'run.failed',
          data: { chat_id: chatId, reason: 'the stream stopped: the process writing it ended' },
        },
      ],
    });
  }
  await setActiveStream(env, chatId, null, runId);
}

/**
 * Recovers the run when no process holds the chat's lease any more; false (nothing done) while one does.
 */
export async function recoverIfDead(env: ChatEnv, chatId: string, runId: string): Promise<boolean> {
  const owner = `recover:${runId}`;
  const lease = await env.store.acquireLease(env.scope, leaseName(chatId), owner, env.leaseMs);
  if (lease === null) return false;
  try {
    await recoverHeld(env, chatId, runId);
    return true;
  } finally {
    await env.store.releaseLease(env.scope, leaseName(chatId), owner);
  }
}
