/**
 * A small HTTP client (node:http, keep-alive) for the demo airline, with a time-out on every call. Errors follow the tool contract:
 * 400 and 409 are certain refusals (`ToolError` rejected), a refused connection is retryable (nothing was
 * sent), and a time-out, a dropped connection or a 5xx is an unknown outcome to recover by lookup.
 */
import { AgentStateError } from '../../core/errors.js';
import { type HttpAnswer, HttpRequestError, httpRequest } from '../../net/http-request.js';
import { withTraceHeaders } from '../../observability/tracing.js';
import { ToolError } from '../../runtime/tool.js';
import type { Booking, BookingRequest } from './booking.js';

export interface AirlineClientOptions {
  /** The airline's base URL, like `http://127.0.0.1:4100`. */
  readonly baseUrl: string;
  /** Per-request time-out in ms. Default 5000. */
  readonly timeoutMs?: number;
}

export interface AirlineClient {
  /** Books with an idempotency key: the same key and request always answer the same booking. */
  book(
    key: string,
    request: BookingRequest,
    signal?: AbortSignal,
  ): Promise<{ booking: Booking; replayed: boolean }>;
  /** The booking made for a key, or null when the airline never saw the key. */
  findByKey(key: string, signal?: AbortSignal): Promise<Booking | null>;
}

/**
 * A call whose outcome is not known: a time-out, a dropped connection or a 5xx. The airline may or may not
 * have booked, so the caller must look the key up rather than assume either way.
 */
export function outcomeUnknown(message: string, cause?: unknown): AgentStateError {
  return new AgentStateError('internal', `[airline] ${message}`, {
    cause,
    details: { downstream: 'airline', outcome: 'unknown' },
  });
}

function errorText(answer: HttpAnswer): string {
  try {
    const body = JSON.parse(answer.body) as { error?: unknown };
    return typeof body.error === 'string' ? body.error : `HTTP ${answer.status}`;
  } catch {
    return `HTTP ${answer.status}`;
  }
}

export function createAirlineClient(options: AirlineClientOptions): AirlineClient {
  const base = options.baseUrl.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? 5_000;

  async function call(
    path: string,
    init: { method: string; headers?: Record<string, string>; body?: string },
    signal: AbortSignal | undefined,
  ): Promise<HttpAnswer> {
    try {
      // The active trace context goes along (traceparent), so the airline's log names the trace.
      const headers = withTraceHeaders(init.headers ?? {});
      return await httpRequest(`${base}${path}`, {
        ...init,
        headers,
        timeoutMs,
        ...(signal ? { signal } : {}),
      });
    } catch (error) {
      if (!(error instanceof HttpRequestError)) throw error;
      if (error.kind === 'timeout') throw outcomeUnknown(`${path}: no answer within ${timeoutMs} ms`, error);
      if (error.kind === 'aborted') throw outcomeUnknown(`${path}: aborted by the caller`, error);
      if (error.kind === 'refused') {
        // the request never reached the airline: certainly nothing was booked, so a retry is safe
        throw new ToolError('retryable', 'unavailable', `[airline] ${path}: connection refused at ${base}`, {
          cause: error,
        });
      }
      throw outcomeUnknown(`${path}: ${error.message}`, error);
    }
  }

  return {
    async book(key, request, signal) {
      const res = await call(
        '/bookings',
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': key },
          body: JSON.stringify(request),
        },
        signal,
      );
      if (res.status === 200 || res.status === 201) {
        const booking = JSON.parse(res.body) as Booking;
        return { booking, replayed: res.headers['idempotent-replayed'] === 'true' };
      }
      const message = `[airline] ${errorText(res)}`;
      if (res.status === 400) throw new ToolError('rejected', 'invalid_request', message);
      if (res.status === 409) {
        throw new ToolError('rejected', 'conflict', message, { details: { idempotency_key: key } });
      }
      throw outcomeUnknown(`POST /bookings answered ${res.status}: ${message}`);
    },

    async findByKey(key, signal) {
      const res = await call(`/bookings/by-key/${encodeURIComponent(key)}`, { method: 'GET' }, signal);
      if (res.status === 200) return JSON.parse(res.body) as Booking;
      if (res.status === 404) return null;
      throw outcomeUnknown(`lookup answered ${res.status}: ${errorText(res)}`);
    },
  };
}
