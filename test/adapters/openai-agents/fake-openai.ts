/**
 * A small OpenAI Chat Completions server on 127.0.0.1 for the SDK to talk to, scripted and deterministic:
 * "weather in <city>" asks for the get_weather tool, a tool result is turned into a reply, anything else is
 * answered with how many user messages the model was shown (so a test sees what history it received).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

interface ChatMessage {
  role: string;
  content?: unknown;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

export interface FakeOpenAI {
  readonly baseURL: string;
  /** The `messages` of every request, in order. */
  readonly requests: ChatMessage[][];
  close(): Promise<void>;
}

function text(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (p as { text?: string }).text ?? '').join('');
  return '';
}

function reply(messages: ChatMessage[], n: number): Record<string, unknown> {
  const last = messages[messages.length - 1];
  const users = messages.filter((m) => m.role === 'user').length;
  let message: Record<string, unknown>;
  let finish = 'stop';
  const city = last?.role === 'user' ? /weather in (\w+)/i.exec(text(last.content))?.[1] : undefined;
  if (city !== undefined) {
    finish = 'tool_calls';
    message = {
      role: 'assistant',
      content: null,
      tool_calls: [
        {
          id: `call_${n}`,
          type: 'function',
          function: { name: 'get_weather', arguments: JSON.stringify({ city }) },
        },
      ],
    };
  } else if (last?.role === 'tool') {
    message = { role: 'assistant', content: `Report: ${text(last.content)}` };
  } else {
    message = { role: 'assistant', content: `Seen ${users} user messages; last: ${text(last?.content)}` };
  }
  return {
    id: `chatcmpl_${n}`,
    object: 'chat.completion',
    created: 1_700_000_000,
    model: 'fake-model',
    choices: [{ index: 0, message, finish_reason: finish, logprobs: null }],
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  };
}

export async function startFakeOpenAI(): Promise<FakeOpenAI> {
  const requests: ChatMessage[][] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => {
      body += chunk.toString('utf8');
    });
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
        return;
      }
      const parsed = JSON.parse(body) as { messages: ChatMessage[] };
      requests.push(parsed.messages);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(reply(parsed.messages, requests.length)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
