/**
 * Retries beneath the typed client: a `fetch` that sends a request again after a 429, a 503 or a connection
 * that failed, waiting what `Retry-After` asks (else an exponential backoff with jitter), a bounded number of
 * times and never longer than `maxDelayMs` at once. The request is the same each time, headers included, so
 * a POST keeps its `Idempotency-Key` and the server runs it once however often it arrives.
 *
 * What is sent again: GET, HEAD, PUT, DELETE and PATCH (a PATCH carries `If-Match`, so a second one that
 * lands after the first answers 409, never changes twice); a POST only with an `Idempotency-Key`, except
 * after a 429 (the rate limit refuses a request before it runs). A retried POST whose key is still held by
 * its first attempt (409 with `details.field` `Idempotency-Key`) waits and asks again for the first answer.
 */
import { retryAfterMsOf } from './errors.js';

export type FetchLike = (request: Request) => Promise<Response>;

export interface RetryOptions {
  /** Attempts after the first one. Default 3; 0 turns retries off. */
  readonly retries?: number;
  /** The first backoff when the server named no wait; it doubles each attempt. Default 100 ms. */
  readonly baseDelayMs?: number;
  /** The longest wait before one attempt. A `Retry-After` beyond it is not waited for. Default 10 s. */
  readonly maxDelayMs?: number;
}

export interface RetryPolicy {
  readonly retries: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
}

export function retryPolicy(options: RetryOptions | number | false | undefined): RetryPolicy {
  const given: RetryOptions =
    options === false ? { retries: 0 } : typeof options === 'number' ? { retries: options } : (options ?? {});
  const retries = Math.max(0, Math.floor(given.retries ?? 3));
  return { retries, baseDelayMs: given.baseDelayMs ?? 100, maxDelayMs: given.maxDelayMs ?? 10_000 };
}

/** Waits `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function backoffMs(policy: RetryPolicy, attempt: number): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
}

type Failure = 'connection' | 'throttled' | 'unavailable' | 'key_in_progress';

function mayResend(request: Request, failure: Failure): boolean {
  if (request.method !== 'POST') return true;
  return failure === 'throttled' || request.headers.has('idempotency-key');
}

async function failureOf(response: Response, attempt: number, request: Request): Promise<Failure | null> {
  if (response.status === 429) return 'throttled';
  if (response.status === 503) return 'unavailable';
  // Only a retry can find its own key in progress: a first attempt that does was given a key in use.
  if (response.status === 409 && attempt > 1 && request.headers.has('idempotency-key')) {
    const body = (await response
      .clone()
      .json()
      .catch(() => null)) as { error?: { details?: { field?: unknown } } } | null;
    if (body?.error?.details?.field === 'Idempotency-Key') return 'key_in_progress';
  }
  return null;
}

/** `base` with retries by `policy`; `wait` is the pause between attempts (a test may count them). */
export function retryingFetch(
  base: FetchLike,
  policy: RetryPolicy,
  wait: (ms: number, signal?: AbortSignal | null) => Promise<void> = sleep,
): FetchLike {
  if (policy.retries === 0) return base;
  return async (request: Request): Promise<Response> => {
    for (let attempt = 1; ; attempt++) {
      const last = attempt > policy.retries;
      let response: Response;
      try {
        response = await base(last ? request : request.clone());
      } catch (error) {
        if (last || request.signal.aborted || !mayResend(request, 'connection')) throw error;
        await wait(backoffMs(policy, attempt), request.signal);
        continue;
      }
      const failure = last ? null : await failureOf(response, attempt, request);
      if (failure === null || !mayResend(request, failure)) return response;
      const asked = retryAfterMsOf(response.headers);
      if (asked !== null && asked > policy.maxDelayMs) return response;
      await response.body?.cancel();
      await wait(asked ?? backoffMs(policy, attempt), request.signal);
    }
  };
}
