import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { makeFolder } from '../../process/folders.js';
import { BookingRequestSchema, describeIssues } from './booking.js';
import { AirlineLedger } from './ledger-book.js';
import { BookingTimings } from './timings.js';

export interface AirlineServiceOptions {
  /** Where the ledger lives (created if missing). */
  readonly dataDir: string;
  /** Port on 127.0.0.1; default 0 (a free port). */
  readonly port?: number;
  /** Delay every booking answer by this many ms after the booking is on disk (to test client time-outs). Default 0. */
  readonly responseDelayMs?: number;
}

export interface AirlineService {
  readonly url: string;
  readonly port: number;
  readonly ledgerPath: string;
  /** Its effect log: every booking request and every booking made (effects.ts). */
  readonly effectsPath: string;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 64 * 1024;
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

class HttpProblem extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const type = req.headers['content-type'] ?? '';
  if (!type.startsWith('application/json'))
    throw new HttpProblem(415, 'content-type must be application/json');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new HttpProblem(413, `body larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new HttpProblem(400, 'body is not valid JSON');
  }
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;

/** A request that carries a W3C traceparent is logged with its trace id (one line on stderr). */
function logTrace(req: IncomingMessage, path: string): void {
  const header = req.headers.traceparent;
  const match = typeof header === 'string' ? TRACEPARENT.exec(header) : null;
  if (match === null) return;
  process.stderr.write(
    `${JSON.stringify({ service: 'airline', method: req.method, path, trace_id: match[1], parent_span_id: match[2] })}\n`,
  );
}

function idempotencyKeyOf(req: IncomingMessage): string {
  const key = req.headers['idempotency-key'];
  if (typeof key !== 'string' || key === '') throw new HttpProblem(400, 'Idempotency-Key header is required');
  if (!KEY_PATTERN.test(key)) {
    throw new HttpProblem(400, 'Idempotency-Key must be 1 to 255 printable ASCII characters without spaces');
  }
  return key;
}

function sinceOf(url: URL): number {
  const text = url.searchParams.get('since') ?? '0';
  const since = Number(text);
  if (!/^\d{1,16}$/.test(text) || !Number.isSafeInteger(since)) {
    throw new HttpProblem(400, `since must be a time in ms since the epoch, got ${JSON.stringify(text)}`);
  }
  return since;
}

function createHandler(ledger: AirlineLedger, delayMs: number, timings: BookingTimings) {
  async function book(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const key = idempotencyKeyOf(req);
    const parsed = BookingRequestSchema.safeParse(await readJson(req));
    if (!parsed.success) throw new HttpProblem(400, `invalid booking: ${describeIssues(parsed.error)}`);
    const outcome = await ledger.book(key, parsed.data);
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    if (outcome.kind === 'key_reused') {
      throw new HttpProblem(409, `Idempotency-Key ${key} was already used for a different booking request`);
    }
    if (outcome.kind === 'replayed') send(res, 200, outcome.booking, { 'idempotent-replayed': 'true' });
    else send(res, 201, outcome.booking);
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://airline.local');
    const path = url.pathname;
    logTrace(req, path);
    if (path === '/bookings') {
      if (req.method !== 'POST') throw new HttpProblem(405, `${req.method} is not allowed on /bookings`);
      const at = Date.now();
      const started = performance.now();
      // 'close' comes after the answer is sent and also when the caller gives up first: a booking the
      // caller stopped waiting for is among the slowest, and must not drop out of the figures.
      res.once('close', () => timings.record(at, performance.now() - started));
      return book(req, res);
    }
    if (req.method !== 'GET') throw new HttpProblem(405, `${req.method} is not allowed on ${path}`);
    if (path === '/health') return send(res, 200, { ok: true, bookings: ledger.size });
    if (path === '/timings') return send(res, 200, { bookings: timings.since(sinceOf(url)) });
    const byKey = /^\/bookings\/by-key\/([^/]+)$/.exec(path);
    if (byKey) {
      const key = decodeURIComponent(byKey[1] ?? '');
      const booking = ledger.byIdempotencyKey(key);
      if (booking === null) throw new HttpProblem(404, `no booking was made with Idempotency-Key ${key}`);
      return send(res, 200, booking);
    }
    const byId = /^\/bookings\/([^/]+)$/.exec(path);
    if (byId) {
      const booking = ledger.byBookingId(decodeURIComponent(byId[1] ?? ''));
      if (booking === null) throw new HttpProblem(404, 'no such booking');
      return send(res, 200, booking);
    }
    throw new HttpProblem(404, `no route ${req.method} ${path}`);
  }

  return (req: IncomingMessage, res: ServerResponse): void => {
    route(req, res).catch((error: unknown) => {
      const problem = error instanceof HttpProblem ? error : new HttpProblem(500, 'internal error');
      if (!(error instanceof HttpProblem)) console.error('[airline]', error);
      if (!res.headersSent) send(res, problem.status, { error: problem.message, status: problem.status });
      else res.destroy();
    });
  };
}

/** Starts the airline on 127.0.0.1; resolves once it listens. */
export async function startAirlineService(options: AirlineServiceOptions): Promise<AirlineService> {
  makeFolder(options.dataDir, "for the airline's ledger");
  const ledger = new AirlineLedger(options.dataDir);
  const server = createServer(createHandler(ledger, options.responseDelayMs ?? 0, new BookingTimings()));
  // Clients keep a connection only when the announced time-out leaves them a margin (Node's agent drops one
  // announced as `timeout=1` after every answer, paying a new TCP connection per booking): 5 s, as Node's own.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  let closing: Promise<void> | null = null;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    ledgerPath: ledger.path,
    effectsPath: ledger.effectsPath,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }).then(() => ledger.close());
      return closing;
    },
  };
}
