/**
 * The crash harness's model: a real HTTP server on loopback that speaks the OpenAI Chat Completions
 * protocol and plays a script. Each answer follows from the conversation it is sent (the tool results so
 * far), never from what it was asked before, so a resumed agent that asks again gets the same answer.
 *
 * Script: search flights; book the first flight found; pay the booking's fare; answer with the booking and
 * the payment in text.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const TRIP = {
  origin: 'CDG',
  destination: 'JFK',
  date: '2027-03-14',
  cabin_class: 'economy',
  passenger_name: 'Alice Martin',
} as const;

export const TRIP_REQUEST = `Book the first flight from ${TRIP.origin} to ${TRIP.destination} on ${TRIP.date} in ${TRIP.cabin_class} for ${TRIP.passenger_name}, and pay for it.`;

interface Message {
  readonly role: string;
  readonly content?: string | null;
}

interface Answer {
  readonly content: string | null;
  readonly tool_calls?: object[];
}

function call(id: string, name: string, args: object) {
  return { id, type: 'function', function: { name, arguments: JSON.stringify(args) } };
}

function parsed(content: string | null | undefined): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(content ?? 'null');
    return value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** The script's next answer for a conversation. */
export function scriptedAnswer(messages: readonly Message[]): Answer {
  const results = messages.filter((m) => m.role === 'tool').map((m) => parsed(m.content));
  const last = results.at(-1) ?? {};
  if (typeof last.error === 'string') return { content: `Sorry, that did not work: ${last.error}` };
  if (results.length === 0) {
    const { origin, destination, date } = TRIP;
    return {
      content: null,
      tool_calls: [call('call_search', 'search_flights', { origin, destination, date })],
    };
  }
  if (results.length === 1) {
    const flights = last.flights as { flight: string }[] | undefined;
    const flight = flights?.[0]?.flight ?? 'none';
    return { content: null, tool_calls: [call('call_book', 'book_flight', { ...TRIP, flight })] };
  }
  if (results.length === 2) {
    const { booking_id, fare_eur } = last;
    return {
      content: null,
      tool_calls: [call('call_pay', 'pay', { booking_id, amount_eur: fare_eur, card: 'visa-4242' })],
    };
  }
  const booking = results[1] ?? {};
  return {
    content: `Booked ${String(booking.pnr)} (${String(booking.booking_id)}) for ${TRIP.passenger_name}; paid ${String(last.amount_eur)} EUR as ${String(last.payment_id)}.`,
  };
}

export interface ScriptedModelServer {
  /** The base URL (…/v1) for a Chat Completions client. */
  readonly url: string;
  /** Requests answered. */
  requests(): number;
  close(): Promise<void>;
}

function reply(res: ServerResponse, status: number, body: object): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function body(req: IncomingMessage): Promise<string> {
  let text = '';
  req.setEncoding('utf8');
  for await (const chunk of req) text += chunk as string;
  return text;
}

/** Starts the scripted model on 127.0.0.1 (a free port). */
export async function startScriptedModel(): Promise<ScriptedModelServer> {
  let count = 0;
  const server: Server = createServer((req, res) => {
    body(req)
      .then((text) => {
        if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
          reply(res, 404, { error: { message: `no route ${req.method} ${req.url}` } });
          return;
        }
        const request = JSON.parse(text) as { model: string; messages: Message[] };
        const message = scriptedAnswer(request.messages);
        count++;
        reply(res, 200, {
          id: `chatcmpl-${count}`,
          object: 'chat.completion',
          created: 1_700_000_000,
          model: request.model,
          choices: [
            {
              index: 0,
              message: { role: 'assistant', ...message },
              finish_reason: message.tool_calls === undefined ? 'stop' : 'tool_calls',
            },
          ],
          usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
        });
      })
      .catch((error: unknown) => reply(res, 400, { error: { message: String(error) } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests: () => count,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
