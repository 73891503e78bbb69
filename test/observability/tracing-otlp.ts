/**
 * A local OTLP/HTTP receiver (http/json) for the tracing tests, and `agentstate serve` (the built CLI) started
 * with a module hook that notes every OpenTelemetry SDK module it loads.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BUILT_MAIN } from '../cli/run.js';

export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly name: string;
  readonly kind: number;
  readonly service: string;
  readonly attributes: Record<string, unknown>;
  readonly links: { traceId: string; spanId: string; attributes: Record<string, unknown> }[];
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
  arrayValue?: { values?: OtlpValue[] };
}
type OtlpAttributes = { key: string; value: OtlpValue }[] | undefined;

function decoded(value: OtlpValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(decoded);
  return null;
}

function attributesOf(list: OtlpAttributes): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((a) => [a.key, decoded(a.value)]));
}

export interface Receiver {
  readonly url: string;
  readonly spans: ReceivedSpan[];
  /** Content types of the export requests, to see the protocol used. */
  readonly contentTypes: Set<string>;
  close(): Promise<void>;
}

/** Takes OTLP/HTTP JSON exports at /v1/traces and keeps their spans. */
export async function startReceiver(): Promise<Receiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes = new Set<string>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      contentTypes.add(String(req.headers['content-type']));
      if (req.url === '/v1/traces' && String(req.headers['content-type']).includes('json')) {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans?: {
            resource?: { attributes?: OtlpAttributes };
            scopeSpans?: { spans?: Record<string, unknown>[] }[];
          }[];
        };
        for (const rs of body.resourceSpans ?? []) {
          const service = String(attributesOf(rs.resource?.attributes)['service.name']);
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              spans.push({
                traceId: String(s.traceId),
                spanId: String(s.spanId),
                parentSpanId: String(s.parentSpanId ?? ''),
                name: String(s.name),
                kind: Number(s.kind),
                service,
                attributes: attributesOf(s.attributes as OtlpAttributes),
                links: (
                  (s.links ?? []) as { traceId: string; spanId: string; attributes: OtlpAttributes }[]
                ).map((l) => ({
                  traceId: l.traceId,
                  spanId: l.spanId,
                  attributes: attributesOf(l.attributes),
                })),
              });
            }
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    contentTypes,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

export interface Served {
  readonly child: ChildProcess;
  readonly url: string;
  stdout: string;
  stderr: string;
  readonly exited: Promise<void>;
}

/** Writes a module hook that appends each OpenTelemetry SDK (or @fastify/otel) module resolved to `log`. */
export function loadHook(dir: string, log: string): string {
  writeFileSync(
    join(dir, 'hooks.mjs'),
    `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const found = await next(specifier, context);
  if (/@opentelemetry\\/(sdk-|exporter-)|@fastify\\/otel/.test(found.url)) appendFileSync(${JSON.stringify(log)}, found.url + '\\n');
  return found;
}
`,
  );
  const register = join(dir, 'register.mjs');
  writeFileSync(
    register,
    `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)});\n`,
  );
  return pathToFileURL(register).href;
}

/** `agentstate serve` of dist/, with `env` (AGENTSTATE_* and OTEL_* of this process left out). */
export function serve(
  args: readonly string[],
  cwd: string,
  env: Record<string, string>,
  hook: string,
): Served {
  const clean = { ...process.env };
  for (const key of Object.keys(clean))
    if (key.startsWith('AGENTSTATE_') || key.startsWith('OTEL_')) delete clean[key];
  const child = spawn(process.execPath, ['--import', hook, BUILT_MAIN, 'serve', ...args], {
    cwd,
    env: { ...clean, AGENTSTATE_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const served = { child, url: '', stdout: '', stderr: '' } as Served & { url: string };
  child.stdout?.on('data', (chunk: Buffer) => {
    served.stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    served.stderr += chunk.toString();
  });
  (served as { exited: Promise<void> }).exited = new Promise((resolve) => child.on('exit', () => resolve()));
  return served;
}

/** Waits for the server's banner and returns it with its URL. */
export async function listening(served: Served): Promise<Served> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const match = /agentstate serving (http:\/\/\S+)/.exec(served.stderr);
    if (match) return Object.assign(served, { url: match[1] as string });
    if (served.child.exitCode !== null) throw new Error(`serve exited: ${served.stderr}`);
    if (Date.now() > deadline) throw new Error(`serve printed no URL: ${served.stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export async function call<T>(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: T }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: (text === '' ? null : JSON.parse(text)) as T };
}

/** Waits until `check` holds (spans arrive in batches), or fails with `what`. */
export async function until(what: string, check: () => boolean, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
