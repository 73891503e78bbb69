import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openaiSummarizer } from '../../src/context/openai-summarizer.js';
import { msg } from './fixtures.js';

/** A real OpenAI-compatible endpoint on loopback that answers with a fixed completion and records requests. */
let server: Server;
let baseUrl: string;
const seen: {
  auth: string | undefined;
  body: { model: string; messages: { role: string; content: string }[] };
}[] = [];
let status = 200;

async function read(req: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of req) text += chunk;
  return text;
}

beforeAll(async () => {
  server = createServer(async (req, res) => {
    seen.push({ auth: req.headers.authorization, body: JSON.parse(await read(req)) });
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        choices: [
          {
            message: {
              role: 'assistant',
              content: '- User flies PEK to NRT\n2. Chose business class\n\n* Booked ZX12Q',
            },
          },
        ],
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('openai summarizer', () => {
  it('posts the previous points and the messages, and parses one point per line', async () => {
    const s = openaiSummarizer({ baseUrl, model: 'gpt-4o-mini', apiKey: 'sk-test', maxPoints: 2 });
    const points = await s.summarize({
      previous: ['earlier point'],
      messages: [msg(7, 'user', 'business class please')],
    });
    expect(points).toEqual(['Chose business class', 'Booked ZX12Q']);
    expect(s.name).toBe('openai:gpt-4o-mini');
    const request = seen[seen.length - 1]!;
    expect(request.auth).toBe('Bearer sk-test');
    expect(request.body.model).toBe('gpt-4o-mini');
    expect(request.body.messages[1]!.content).toContain('- earlier point');
    expect(request.body.messages[1]!.content).toContain('[7] user: business class please');
  });

  it('fails loudly on an error status and refuses bad options', async () => {
    status = 500;
    const s = openaiSummarizer({ baseUrl, model: 'm' });
    await expect(s.summarize({ previous: [], messages: [] })).rejects.toMatchObject({ code: 'internal' });
    status = 200;
    expect(() => openaiSummarizer({ baseUrl: 'ftp://x', model: 'm' })).toThrow(/baseUrl/);
    expect(() => openaiSummarizer({ baseUrl, model: '' })).toThrow(/model/);
  });
});
