/**
 * An incremental Server-Sent Events parser (the WHATWG `text/event-stream` rules), for Node 20 and browsers:
 * text goes in as it arrives, cut anywhere (inside a line, between a CR and its LF), and whole messages come
 * out. Lines end with CRLF, LF or CR; a line starting with `:` is a comment; `data:` lines of one message
 * are joined with `\n`; `id:` sets the last event id, which stays until another `id:` changes it; `retry:`
 * sets the reconnection time. A message is dispatched at a blank line only, so the unfinished message a
 * dropped connection leaves is never returned (the stream resumes after the last whole one).
 */

export interface SseMessage {
  /** `event:`, or `message` when the message named none. */
  readonly event: string;
  /** The `data:` lines, joined with `\n`. */
  readonly data: string;
  /** The last event id when the message was dispatched (its own `id:` or an earlier one); null: none yet. */
  readonly id: string | null;
}

export class SseParser {
  private pending = '';
  /** The text before ended with CR: an LF that begins the next text belongs to it. */
  private afterCr = false;
  private started = false;
  private data: string[] = [];
  private event = '';
  private lastId: string | null = null;
  /** The reconnection time the stream asked for (`retry:`), in ms; null when it named none. */
  retryMs: number | null = null;
  /** How many comment lines (keep-alives) have been read. */
  comments = 0;

  /** Reads `text` (the next piece of the stream); answers the messages it completed. */
  push(text: string): SseMessage[] {
    let input = text;
    if (this.afterCr && input.length > 0) {
      if (input.startsWith('\n')) input = input.slice(1);
      this.afterCr = false;
    }
    if (!this.started && input.length > 0) {
      this.started = true;
      if (input.startsWith('\uFEFF')) input = input.slice(1);
    }
    const out: SseMessage[] = [];
    // `pending` holds no line end, so the search starts in the new text.
    let scan = this.pending.length;
    const all = this.pending + input;
    let pos = 0;
    for (;;) {
      let end = -1;
      for (let i = scan; i < all.length; i++) {
        const c = all.charCodeAt(i);
        if (c === 10 || c === 13) {
          end = i;
          break;
        }
      }
      if (end < 0) break;
      const line = all.slice(pos, end);
      if (all.charCodeAt(end) === 13) {
        if (end + 1 === all.length) {
          this.afterCr = true;
          pos = end + 1;
        } else pos = all.charCodeAt(end + 1) === 10 ? end + 2 : end + 1;
      } else pos = end + 1;
      scan = pos;
      this.line(line, out);
    }
    this.pending = all.slice(pos);
    return out;
  }

  private line(line: string, out: SseMessage[]): void {
    if (line === '') {
      this.dispatch(out);
      return;
    }
    if (line.startsWith(':')) {
      this.comments++;
      return;
    }
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
    else if (field === 'id') {
      if (!value.includes('\u0000')) this.lastId = value;
    } else if (field === 'retry') {
      if (/^\d+$/.test(value)) this.retryMs = Number(value);
    }
  }

  private dispatch(out: SseMessage[]): void {
    const data = this.data;
    const event = this.event;
    this.data = [];
    this.event = '';
    if (data.length === 0) return;
    out.push({ event: event === '' ? 'message' : event, data: data.join('\n'), id: this.lastId });
  }
}

/**
 * The messages of an event-stream body as they arrive, until it ends (an unfinished last message is
 * dropped). Leaving the loop early cancels the body. The parser counts the comments (keep-alives) read.
 */
export async function* sseMessages(
  body: ReadableStream<Uint8Array>,
  parser: SseParser = new SseParser(),
): AsyncGenerator<SseMessage, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let done = false;
  try {
    for (;;) {
      const next = await reader.read();
      if (next.done) {
        done = true;
        yield* parser.push(decoder.decode());
        return;
      }
      yield* parser.push(decoder.decode(next.value, { stream: true }));
    }
  } finally {
    if (!done) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
