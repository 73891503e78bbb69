/**
 * A body over the size limit (`limits.bodyLimitBytes`) gets a 413 the client can read.
 *
 * Fastify refuses such a body (FST_ERR_CTP_BODY_TOO_LARGE) as soon as it knows: from the Content-Length,
 * before reading any of it, or at the chunk of a streamed body that crosses the limit. It answers with
 * `Connection: close`, and Node closes the socket once the answer is written, while the client is still
 * sending: the unread bytes make the kernel reset the connection, so a client that writes its whole body
 * before reading (curl, many SDKs, anyone on a slower link) sees ECONNRESET or EPIPE, not the 413.
 *
 * `withBodyLimit` wraps the error handler: the 413 names the limit, and the rest of the body is read and
 * dropped, up to `drainBytes` more bytes (max(1 MiB, 4x the limit)) within `drainMs` (5 s), so the client
 * finishes writing and reads the answer. A body read to its end leaves the connection framed as HTTP says,
 * so it stays open for the next request. Past either bound the socket is destroyed (once the answer is out):
 * a client sending gigabytes costs that much reading at most, and no memory, as drained bytes are not kept.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AgentStateError } from '../core/errors.js';

export interface DrainBounds {
  /** The most body bytes read and dropped after the 413. Default max(1 MiB, 4x the limit). */
  readonly drainBytes?: number;
  /** The longest time the rest of the body is waited for after the 413. Default 5 000. */
  readonly drainMs?: number;
}

type ErrorHandler = (error: unknown, request: FastifyRequest, reply: FastifyReply) => void;

const MIB = 1024 * 1024;

/** `next` (the server's error handler) with a body over `limitBytes` answered as described above. */
export function withBodyLimit(
  next: ErrorHandler,
  limitBytes: number,
  bounds: DrainBounds = {},
): ErrorHandler {
  const drainBytes = bounds.drainBytes ?? Math.max(MIB, 4 * limitBytes);
  const drainMs = bounds.drainMs ?? 5_000;
  return (error, request, reply) => {
    if ((error as { code?: unknown } | null)?.code !== 'FST_ERR_CTP_BODY_TOO_LARGE') {
      next(error, request, reply);
      return;
    }
    drain(request, reply, drainBytes, drainMs);
    next(
      new AgentStateError(
        'payload_too_large',
        `the request body is larger than the ${limitBytes} bytes allowed`,
      ),
      request,
      reply,
    );
  };
}

/** Reads and drops what is left of the request's body, up to the bounds; past them, closes the connection. */
function drain(request: FastifyRequest, reply: FastifyReply, drainBytes: number, drainMs: number): void {
  const req = request.raw;
  const res = reply.raw;
  const socket = req.socket;
  if (req.complete || socket.destroyed) return;
  // Fastify stops reading and asks for a close; the body is read to its end here instead.
  void reply.removeHeader('connection');
  let read = 0;
  const count = (chunk: Buffer) => {
    read += chunk.length;
    if (read > drainBytes) cutOff(`more than ${drainBytes} further bytes`);
  };
  // Node's server, draining a request itself once the answer is out, drops its 'data' listeners.
  const keepCounting = () => {
    if (!req.listeners('data').includes(count)) req.on('data', count);
  };
  const stop = () => {
    clearTimeout(timer);
    req.off('data', count);
    req.off('end', stop);
    res.off('finish', keepCounting);
    socket.off('close', stop);
  };
  const cutOff = (why: string) => {
    stop();
    request.log.info({ drainedBytes: read }, `body over the limit: connection closed after ${why}`);
    if (res.writableFinished) socket.destroy();
    else res.once('close', () => socket.destroy());
  };
  const timer = setTimeout(() => cutOff(`${drainMs} ms`), drainMs);
  timer.unref();
  req.on('data', count);
  req.once('end', stop);
  res.once('finish', keepCounting);
  socket.once('close', stop);
}
