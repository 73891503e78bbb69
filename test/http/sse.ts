/** A small Server-Sent Events reader for tests: the frames of a response, as they come. */

export interface SseFrame {
  readonly id: string | null;
  readonly event: string;
  /** The `data:` lines joined, parsed as JSON. */
  readonly data: unknown;
}

/** Frames of an event-stream body until it ends; comments (`: ...`) are skipped. */
export async function* sseFrames(body: ReadableStream<Uint8Array>): AsyncGenerator<SseFrame> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    for (;;) {
      const end = buffer.indexOf('\n\n');
      if (end < 0) break;
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let id: string | null = null;
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') id = value;
        else if (field === 'event') event = value;
        else if (field === 'data') data.push(value);
      }
      if (data.length > 0) yield { id, event, data: JSON.parse(data.join('\n')) };
    }
  }
}

/** Every frame of an event-stream response, read to its end. */
export async function allFrames(response: Response): Promise<SseFrame[]> {
  if (response.body === null) throw new Error('the response has no body');
  const frames: SseFrame[] = [];
  for await (const frame of sseFrames(response.body)) frames.push(frame);
  return frames;
}
