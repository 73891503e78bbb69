/**
 * A streamed model answer (`doStream`, what `streamText` calls) as one recorded step of a durable run: the
 * parts are handed on as they come from the model and kept; once the model's stream ends they are
 * recorded together, as the step's value. A replay re-emits the recorded parts without calling the model.
 *
 * The step ends before the run's next call begins (the context's queue), so a tool that `streamText`
 * starts while the model still streams waits for the answer to be recorded: a resumed run finds the tool
 * call in the journal, in the same order. A run that stops while the model streams asks the model again.
 */
import type { wrapLanguageModel } from 'ai';
import { AgentStateError } from '../../core/errors.js';
import type { JsonValue } from '../../core/json.js';
import type { Codec } from '../../durable/codec.js';
import type { DurableContext } from '../../durable/types.js';
import { modelAnswer, queueOf } from '../shared/durable-calls.js';

type Model = Parameters<typeof wrapLanguageModel>[0]['model'];
type StreamResult = Awaited<ReturnType<Model['doStream']>>;
export type StreamPart = StreamResult['stream'] extends ReadableStream<infer P> ? P : never;

/** One part as JSON: dates as ISO strings, bytes as base64, an error as its message. */
function encodePart(part: StreamPart): JsonValue {
  if (part.type === 'response-metadata' && part.timestamp !== undefined)
    return JSON.parse(JSON.stringify({ ...part, timestamp: part.timestamp.toISOString() })) as JsonValue;
  if (part.type === 'file' && part.data instanceof Uint8Array)
    return JSON.parse(JSON.stringify({ ...part, data: Buffer.from(part.data).toString('base64') }));
  if (part.type === 'error') {
    const message = part.error instanceof Error ? part.error.message : String(part.error);
    return { type: 'error', error: message };
  }
  return JSON.parse(JSON.stringify(part)) as JsonValue;
}

function decodePart(json: JsonValue): StreamPart {
  if (json === null || typeof json !== 'object' || Array.isArray(json) || typeof json.type !== 'string')
    throw new AgentStateError('internal', 'a recorded stream part is not an object with a type');
  if (json.type === 'response-metadata' && typeof json.timestamp === 'string')
    return { ...json, timestamp: new Date(json.timestamp) } as unknown as StreamPart;
  return json as unknown as StreamPart;
}

/** The parts of a streamed answer, as a step records them. */
export const streamPartsCodec: Codec<StreamPart[]> = {
  encode: (parts) => parts.map(encodePart),
  decode: (json) => {
    if (!Array.isArray(json))
      throw new AgentStateError('internal', 'the recorded stream is not a list of parts');
    return json.map(decodePart);
  },
};

/**
 * `doStream` as the step `name` of `ctx`: resolves once the model answers (or at once on a replay) with a
 * stream of the answer's parts. The model's failure to answer rejects (`upstream_unavailable`, so the run
 * stays open to be continued); a stream cut off mid-way errors.
 */
export function recordedStream(
  ctx: DurableContext,
  name: string,
  doStream: () => PromiseLike<StreamResult>,
): Promise<StreamResult> {
  return new Promise<StreamResult>((resolve, reject) => {
    let out!: ReadableStreamDefaultController<StreamPart>;
    const stream = new ReadableStream<StreamPart>({
      start(controller) {
        out = controller;
      },
    });
    let live = false;
    const step = queueOf(ctx)(() =>
      ctx.step(
        name,
        async () => {
          live = true;
          const answer = await modelAnswer(doStream);
          resolve({ ...answer, stream });
          const parts: StreamPart[] = [];
          const reader = answer.stream.getReader();
          for (;;) {
            const next = await reader.read();
            if (next.done) return parts;
            parts.push(next.value);
            out.enqueue(next.value);
          }
        },
        { codec: streamPartsCodec },
      ),
    );
    step.then(
      (parts) => {
        if (!live) {
          for (const part of parts) out.enqueue(part);
          resolve({ stream });
        }
        out.close();
      },
      (error: unknown) => {
        reject(error);
        out.error(error);
      },
    );
  });
}
