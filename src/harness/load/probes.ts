/**
 * Cross-user probes: after the run, users ask for other users' sessions, messages, context, checkpoints,
 * tasks, task events and actions, actions, memory, and lists filtered by the other user, with their own
 * token (probe-plan.ts says which). Each must find nothing: 404, a 400 refusal, or an empty list.
 */
import { type Exchange, jsonOf, request } from './http.js';
import { type Probe, type ProbeExpect, type ProbePlanInput, planProbes } from './probe-plan.js';
import type { Phase, SimUser, Target } from './user.js';

export interface ProbeFailure {
  readonly prober: string;
  readonly owner: string;
  readonly request: string;
  /** The route's pattern (`GET /v1/actions/:id`). */
  readonly route: string;
  readonly expected: ProbeExpect;
  readonly status: number;
  readonly body: string;
}

/** Probes and failures of one route, or of the users of one phase (as owners). */
export interface ProbeTally {
  readonly probes: number;
  readonly failures: number;
}

export interface ProbeResult {
  readonly probes: number;
  readonly failures: ProbeFailure[];
  /** Every probe answer, for the leak check. */
  readonly exchanges: { receiver: string; exchange: Exchange }[];
  /** By route pattern, in the order first probed. */
  readonly routes: Record<string, ProbeTally>;
  /** By the phase of the user whose records were asked for. */
  readonly phases: Partial<Record<Phase, ProbeTally>>;
}

function passes(expect: ProbeExpect, exchange: Exchange): boolean {
  if (expect === 'not_found') return exchange.status === 404;
  if (expect === 'refused') return exchange.status === 400;
  const items = jsonOf<{ items?: unknown[] }>(exchange)?.items;
  return exchange.status === 200 && Array.isArray(items) && items.length === 0;
}

function tally(into: Record<string, ProbeTally>, key: string, failed: boolean): void {
  const was = into[key] ?? { probes: 0, failures: 0 };
  into[key] = { probes: was.probes + 1, failures: was.failures + (failed ? 1 : 0) };
}

/**
 * `users` alone: every pair of them probes each other (and nobody else). With a plan: every pair of
 * `everyPair`, and `spread` probers for every user of `everyone`.
 */
export async function probeAll(
  target: Target,
  users: readonly SimUser[] | ProbePlanInput,
  concurrency = 16,
  onProgress?: (done: number, total: number) => void,
): Promise<ProbeResult> {
  const plan: ProbePlanInput =
    'everyPair' in users ? users : { everyPair: users, everyone: users, spread: 0 };
  const queue: Probe[] = planProbes(plan);
  const total = queue.length;
  const failures: ProbeFailure[] = [];
  const exchanges: { receiver: string; exchange: Exchange }[] = [];
  const routes: Record<string, ProbeTally> = {};
  const phases: Record<string, ProbeTally> = {};
  let next = 0;
  const worker = async () => {
    while (next < queue.length) {
      const probe = queue[next++] as Probe;
      const exchange = await request(target.url, 'GET', probe.path, { token: probe.prober.token });
      exchanges.push({ receiver: probe.prober.userId, exchange });
      const failed = !passes(probe.expect, exchange);
      tally(routes, probe.route, failed);
      tally(phases, probe.owner.phase, failed);
      if (failed) {
        failures.push({
          prober: probe.prober.userId,
          owner: probe.owner.userId,
          request: `GET ${probe.path}`,
          route: probe.route,
          expected: probe.expect,
          status: exchange.status,
          body: (exchange.error ?? exchange.body).slice(0, 300),
        });
      }
      if (exchanges.length % 500 === 0) onProgress?.(exchanges.length, total);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, Math.max(1, total)) }, worker));
  onProgress?.(exchanges.length, total);
  return { probes: total, failures, exchanges, routes, phases };
}
