/**
 * The client's Server-Sent Events parser: whole messages out of text cut anywhere, with CRLF, CR or LF line
 * ends, comments, multi-line data, a sticky last event id, and an unfinished message at the end dropped.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type SseMessage, SseParser, sseMessages } from '../../src/client/sse.js';

function parseAll(pieces: readonly string[]): SseMessage[] {
  const parser = new SseParser();
  return pieces.flatMap((piece) => parser.push(piece));
}

const STREAM =
  '\uFEFF: hello\n\nid: 1\nevent: run.started\ndata: {"a":1}\n\n' +
  ': keep-alive\n\nid: 2\nevent: message.delta\ndata: line one\ndata: line two\n\n' +
  'data: no id of its own\n\nid: 3\ndata:x\nretry: 1500\nunknown: field\n\n';

const EXPECTED: SseMessage[] = [
  { event: 'run.started', data: '{"a":1}', id: '1' },
  { event: 'message.delta', data: 'line one\nline two', id: '2' },
  { event: 'message', data: 'no id of its own', id: '2' },
  { event: 'message', data: 'x', id: '3' },
];

describe('SseParser', () => {
  it('reads messages, comments, multi-line data and a sticky id', () => {
    const parser = new SseParser();
    expect(parser.push(STREAM)).toEqual(EXPECTED);
    expect(parser.comments).toBe(2);
    expect(parser.retryMs).toBe(1500);
  });

  it('the same with CRLF and with CR line ends, however the text is cut', () => {
    for (const end of ['\r\n', '\r']) {
      const text = STREAM.replace(/\n/g, end);
      expect(parseAll([text])).toEqual(EXPECTED);
      // Every cut in two, a CR and its LF apart included.
      for (let i = 0; i <= text.length; i++)
        expect(parseAll([text.slice(0, i), text.slice(i)])).toEqual(EXPECTED);
    }
  });

  it('any cutting into pieces of any line-end mix gives the same messages', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('\n', '\r\n', '\r'),
        fc.array(fc.integer({ min: 0, max: STREAM.length }), { maxLength: 12 }),
        (end, cuts) => {
          const text = STREAM.replace(/\n/g, end);
          const points = [...new Set(cuts.map((c) => Math.min(c, text.length)))].sort((a, b) => a - b);
          const pieces: string[] = [];
          let from = 0;
          for (const point of points) {
            pieces.push(text.slice(from, point));
            from = point;
          }
          pieces.push(text.slice(from));
          expect(parseAll(pieces)).toEqual(EXPECTED);
        },
      ),
    );
  });

  it('a message not ended by a blank line is not given', () => {
    expect(parseAll(['id: 1\ndata: whole\n\nid: 2\ndata: cut'])).toEqual([
      { event: 'message', data: 'whole', id: '1' },
    ]);
    expect(parseAll(['data: a\n'])).toEqual([]);
    // A field with no colon, an empty data line, an id with NUL (ignored).
    expect(parseAll(['data\ndata:\nid: a\u0000b\n\n'])).toEqual([{ event: 'message', data: '\n', id: null }]);
  });

  it('sseMessages decodes bytes cut inside a UTF-8 character, and drops an unfinished message', async () => {
    const bytes = new TextEncoder().encode('id: 1\ndata: {"text":"héllo ☃"}\n\nid: 2\ndata: {"cut');
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 3) controller.enqueue(bytes.subarray(i, i + 3));
        controller.close();
      },
    });
    const out: SseMessage[] = [];
    for await (const message of sseMessages(body)) out.push(message);
    expect(out).toEqual([{ event: 'message', data: '{"text":"héllo ☃"}', id: '1' }]);
  });
});
