/**
 * Cross-user probes: after the run, every user asks for every other user's session, messages, context and
 * tasks with its own token. Each must answer 404 (a list filtered by another user's session must be empty).
 */
import { type Exchange, jsonOf, request } from './http.js';
import type { SimUser, Target } from './user.js';

export interface ProbeFailure {
  readonly prober: string;
  readonly owner: string;
  readonly request: string;
  readonly status: number;
  readonly body: string;
}

export interface ProbeResult {
  readonly probes: number;
  readonly failures: ProbeFailure[];
  /** Every probe answer, for the leak check. */
  readonly exchanges: { receiver: string; exchange: Exchange }[];
}

interface Probe {
  readonly prober: SimUser;
  readonly owner: SimUser;
  readonly path: string;
  /** 404, or 200 with an empty `items` list. */
  readonly expect: 404 | 'empty';
}

function probesOf(users: readonly SimUser[]): Probe[] {
  const out: Probe[] = [];
  for (const prober of users) {
    if (!prober.token) continue;
    for (const owner of users) {
      if (owner === prober || owner.sessionId === null) continue;
      const sid = owner.sessionId;
      for (const path of [
        `/v1/sessions/${sid}`,
        `/v1/sessions/${sid}/messages`,
        `/v1/sessions/${sid}/context`,
      ])
        out.push({ prober, owner, path, expect: 404 });
      for (const tid of owner.taskIds) {
        out.push({ prober, owner, path: `/v1/tasks/${tid}`, expect: 404 });
        out.push({ prober, owner, path: `/v1/tasks/${tid}/events`, expect: 404 });
      }
      out.push({ prober, owner, path: `/v1/tasks?session_id=${sid}`, expect: 'empty' });
    }
  }
  return out;
}

function passes(probe: Probe, exchange: Exchange): boolean {
  if (probe.expect === 404) return exchange.status === 404;
  const items = jsonOf<{ items?: unknown[] }>(exchange)?.items;
  return exchange.status === 200 && Array.isArray(items) && items.length === 0;
}

export async function probeAll(
  target: Target,
  users: readonly SimUser[],
  concurrency = 16,
  onProgress?: (done: number, total: number) => void,
): Promise<ProbeResult> {
  const queue = probesOf(users);
  const total = queue.length;
  const failures: ProbeFailure[] = [];
  const exchanges: { receiver: string; exchange: Exchange }[] = [];
  let next = 0;
  const worker = async () => {
    while (next < queue.length) {
      const probe = queue[next++] as Probe;
      const exchange = await request(target.url, 'GET', probe.path, { token: probe.prober.token });
      exchanges.push({ receiver: probe.prober.userId, exchange });
      if (!passes(probe, exchange)) {
        failures.push({
          prober: probe.prober.userId,
          owner: probe.owner.userId,
          request: `GET ${probe.path}`,
          status: exchange.status,
          body: (exchange.error ?? exchange.body).slice(0, 300),
        });
      }
      if (exchanges.length % 500 === 0) onProgress?.(exchanges.length, total);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, Math.max(1, total)) }, worker));
  onProgress?.(exchanges.length, total);
  return { probes: total, failures, exchanges };
}
