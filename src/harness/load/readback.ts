/**
 * After the run, every user reads back what is its own: its session's messages (every page), the context
 * a model call of its session would see, and its remembered preferences. Their answers join the user's
 * exchanges for the leak check (a server that mixes another session's text into them is caught by that
 * session's markers), and the markers the user planted are counted in its own messages: found there, the
 * server kept them, so a marker leaked anywhere else would have been found too.
 */
import { bearer, type Exchange, send } from './http.js';
import { MEMORY_NAMESPACE } from './probe-plan.js';
import type { SimUser, Target } from './user.js';

export interface ReadBack {
  /** Markers planted in the turns' text, one per turn sent. */
  readonly planted: number;
  /** Of them, those found in their writer's own messages. */
  readonly stored: number;
}

const PAGE = 1000;

/** How many of the user's markers its own messages hold. */
async function readOne(target: Target, user: SimUser): Promise<number> {
  if (user.sessionId === null || !user.token) return 0;
  const id = user.sessionId;
  const keep = (exchange: Exchange) => {
    user.exchanges.push(exchange);
    if (exchange.status !== 200) {
      const failed = `${exchange.method} ${exchange.path}: ${exchange.status || exchange.error}`;
      user.errors.push(`${failed} ${exchange.body.slice(0, 200)}`);
    }
    return exchange;
  };
  const texts: string[] = [];
  let cursor: string | undefined;
  do {
    const query = { limit: String(PAGE), ...(cursor === undefined ? {} : { cursor }) };
    const page = await send(target.url, 'GET /v1/sessions/{id}/messages', undefined, (raw) =>
      raw.GET('/v1/sessions/{id}/messages', { ...bearer(user.token), params: { path: { id }, query } }),
    );
    keep(page.exchange);
    for (const item of page.data?.items ?? []) texts.push(item.content ?? '');
    cursor = page.data?.next_cursor ?? undefined;
  } while (cursor !== undefined);
  const context = await send(target.url, 'GET /v1/sessions/{id}/context', undefined, (raw) =>
    raw.GET('/v1/sessions/{id}/context', { ...bearer(user.token), params: { path: { id } } }),
  );
  keep(context.exchange);
  const path = { user_id: user.userId, namespace: MEMORY_NAMESPACE };
  const memory = await send(target.url, 'GET /v1/users/{user_id}/memory/{namespace}', undefined, (raw) =>
    raw.GET('/v1/users/{user_id}/memory/{namespace}', { ...bearer(user.token), params: { path } }),
  );
  keep(memory.exchange);
  const all = texts.join('\n');
  return user.planted.filter((marker) => all.includes(marker)).length;
}

export async function readBackAll(
  target: Target,
  users: readonly SimUser[],
  concurrency = 16,
): Promise<ReadBack> {
  let next = 0;
  let stored = 0;
  const worker = async () => {
    while (next < users.length) {
      // not `stored += await ...`: that reads `stored` before the await and loses the other workers' counts
      const found = await readOne(target, users[next++] as SimUser);
      stored += found;
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, Math.max(1, users.length)) }, worker));
  return { planted: users.reduce((n, user) => n + user.planted.length, 0), stored };
}
