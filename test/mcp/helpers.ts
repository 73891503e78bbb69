/** The MCP SDK's own client, connected over Streamable HTTP or stdio, and readers of its answers. */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { expect } from 'vitest';

export interface ToolAnswer {
  readonly isError?: boolean;
  readonly content: { type: string; text?: string }[];
  readonly structuredContent?: Record<string, unknown>;
}

export function newClient(): Client {
  return new Client({ name: 'agentstate-test', version: '1.0.0' });
}

/** A client of `base/mcp` with `Authorization: Bearer <token>` (none when token is null). */
export async function connectHttp(base: string, token: string | null): Promise<Client> {
  const client = newClient();
  const headers: Record<string, string> = token === null ? {} : { authorization: `Bearer ${token}` };
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers } }),
  );
  return client;
}

/** A client of a child process speaking MCP on its stdin and stdout. */
export async function connectStdio(
  command: string,
  args: string[],
  env: Record<string, string>,
  cwd: string,
): Promise<{ client: Client; transport: StdioClientTransport; stderr: () => string }> {
  const transport = new StdioClientTransport({ command, args, env, cwd, stderr: 'pipe' });
  let errText = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    errText += chunk.toString();
  });
  const client = newClient();
  await client.connect(transport);
  return { client, transport, stderr: () => errText };
}

/** Calls a tool and answers its result, as the SDK gives it. */
export async function call(client: Client, name: string, args: Record<string, unknown>): Promise<ToolAnswer> {
  return (await client.callTool({ name, arguments: args })) as ToolAnswer;
}

/** The structured answer of a tool call that must succeed; its text is the same JSON. */
export async function ok<T = Record<string, unknown>>(
  client: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<T> {
  const answer = await call(client, name, args);
  expect(answer.isError, answer.content[0]?.text).not.toBe(true);
  const text = answer.content[0]?.text ?? '';
  expect(JSON.parse(text)).toEqual(answer.structuredContent);
  return answer.structuredContent as T;
}

/** The text of a tool call that must fail as a tool error (never a thrown protocol error). */
export async function refused(client: Client, name: string, args: Record<string, unknown>): Promise<string> {
  const answer = await call(client, name, args);
  expect(answer.isError, JSON.stringify(answer)).toBe(true);
  expect(answer.structuredContent).toBeUndefined();
  return answer.content[0]?.text ?? '';
}

/** The text of the first content of a resource read. */
export function resourceText(read: { contents: ({ text: string } | { blob: string })[] }): string {
  const first = read.contents[0];
  if (first === undefined || !('text' in first)) throw new Error('the resource answered no text');
  return first.text;
}
