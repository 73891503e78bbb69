/**
 * A scripted model behind a real HTTP server on loopback that speaks the OpenAI Chat Completions protocol:
 * its answers follow from the conversation it is sent, so every run gets the same tool calls.
 *
 * Script: search flights; book the first flight without a passenger (arguments the tool's schema refuses);
 * told what was wrong, book it again with the passenger; answer with the booking in text.
 * It counts the requests it gets per conversation (by the user's message).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

interface Message {
  readonly role: string;
  readonly content?: string | null;
  readonly tool_call_id?: string;
}

export interface ScriptedModel {
  /** The base URL (…/v1) to give a Chat Completions client. */
  readonly url: string;
  /** Requests received per conversation, by its user message. */
  readonly requests: Map<string, number>;
  /** The tool names each request offered, in order. */
  readonly offered: string[][];
  close(): Promise<void>;
}

function call(id: string, name: string, args: object) {
  return { id, type: 'function', function: { name, arguments: JSON.stringify(args) } };
}

/** The next answer of the script for `messages`. */
export function scriptedAnswer(messages: readonly Message[]): {
  content: string | null;
  tool_calls?: object[];
} {
  const results = messages.filter((m) => m.role === 'tool').map((m) => JSON.parse(m.content ?? 'null'));
  const last = results.at(-1);
  if (results.length === 0) {
    return { content: null, tool_calls: [call('call_search', 'search_flights', { from: 'PEK', to: 'SHA' })] };
  }
  if (results.length === 1) {
    const flight = last.flights[0].id;
    return { content: null, tool_calls: [call('call_book_1', 'book_flight', { flight_id: flight })] };
  }
  if (results.length === 2 && typeof last.error === 'string') {
    const flight = results[0].flights[0].id;
    return {
      content: null,
      tool_calls: [call('call_book_2', 'book_flight', { flight_id: flight, passenger: 'Alice' })],
    };
  }
  if (typeof last.booking_id === 'string')
    return { content: `Booked ${last.booking_id} on ${last.flight_id}.` };
  return { content: `Sorry, that did not work: ${JSON.stringify(last)}` };
}

export async function startScriptedModel(): Promise<ScriptedModel> {
  const requests = new Map<string, number>();
  const offered: string[][] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
    });
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
        return;
      }
      const parsed = JSON.parse(body) as {
        model: string;
        messages: Message[];
        tools?: { function: { name: string } }[];
      };
      const user = parsed.messages.find((m) => m.role === 'user')?.content ?? '';
      requests.set(user, (requests.get(user) ?? 0) + 1);
      offered.push((parsed.tools ?? []).map((t) => t.function.name));
      const message = scriptedAnswer(parsed.messages);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: `chatcmpl-${requests.get(user)}`,
          object: 'chat.completion',
          created: 1_700_000_000,
          model: parsed.model,
          choices: [
            {
              index: 0,
              message: { role: 'assistant', ...message },
              finish_reason: message.tool_calls === undefined ? 'stop' : 'tool_calls',
            },
          ],
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    offered,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
