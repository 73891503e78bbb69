/**
 * The context benchmark: building the context of a session with a long history must cost about what it
 * costs for a short one (the builder reads the window, never the history). For each store, two sessions
 * (100 and 100,000 messages by default) get the same budget; builds alternate between them, and the
 * report gives the latency percentiles of each and the ratio long/short (goal: at most 2).
 * For contrast it also times reading the whole history once, which is what a naive builder would do.
 */
import { performance } from 'node:perf_hooks';
import { buildContext } from '../../context/build.js';
import { loadTokenizer } from '../../context/tokenizer.js';
import type { NewMessage, Scope, StateStore } from '../../store/types.js';

export interface ContextBenchOptions {
  readonly store: StateStore;
  /** A label for the report, e.g. `sqlite`. */
  readonly label: string;
  readonly shortMessages?: number;
  readonly longMessages?: number;
  readonly maxTokens?: number;
  readonly iterations?: number;
  readonly warmup?: number;
  readonly onProgress?: (text: string) => void;
}

export interface LatencyStats {
  readonly p50_ms: number;
  readonly p95_ms: number;
  readonly mean_ms: number;
  readonly messages_in_window: number;
  readonly messages_read: number;
  readonly token_count: number;
}

export interface ContextBenchResult {
  readonly store: string;
  readonly max_tokens: number;
  readonly iterations: number;
  readonly short: LatencyStats & { readonly history: number };
  readonly long: LatencyStats & { readonly history: number };
  /** long p50 / short p50. */
  readonly ratio_p50: number;
  readonly ratio_p95: number;
  /** Reading the long history in full once, in ms (what the builder avoids). */
  readonly full_history_read_ms: number;
  readonly seed_ms: number;
}

/** One turn of a realistic chat: user, a tool call with its result, the reply (4 messages). */
function turn(i: number): NewMessage[] {
  return [
    {
      role: 'user',
      content: `Turn ${i}: find me a flight to Tokyo around day ${i % 28} and check the seats.`,
    },
    {
      role: 'assistant',
      content: '',
      tool_calls: [{ id: `c${i}`, name: 'airline.search', arguments: { to: 'NRT', day: i % 28 } }],
    },
    {
      role: 'tool',
      content: `{"flights":[{"no":"CA${900 + (i % 90)}","seats":${i % 9}}]}`,
      tool_call_id: `c${i}`,
      name: 'airline.search',
    },
    { role: 'assistant', content: `Flight CA${900 + (i % 90)} has ${i % 9} seats left on day ${i % 28}.` },
  ];
}

async function seed(
  store: StateStore,
  scope: Scope,
  count: number,
  progress: (n: number) => void,
): Promise<string> {
  const session = await store.createSession(scope, { agent: 'bench', ttl_seconds: 86_400 });
  let written = 0;
  let i = 0;
  while (written < count) {
    const batch: NewMessage[] = [];
    while (batch.length < 1000 && written + batch.length < count) batch.push(...turn(i++));
    const part = batch.slice(0, count - written);
    await store.appendMessages(scope, session.id, part);
    written += part.length;
    if (written % 10_000 === 0) progress(written);
  }
  return session.id;
}

function percentile(sorted: readonly number[], p: number): number {
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? 0;
}

const round = (n: number) => Math.round(n * 1000) / 1000;

export async function runContextBench(options: ContextBenchOptions): Promise<ContextBenchResult> {
  const { store } = options;
  const shortCount = options.shortMessages ?? 100;
  const longCount = options.longMessages ?? 100_000;
  const maxTokens = options.maxTokens ?? 2000;
  const iterations = options.iterations ?? 200;
  const warmup = options.warmup ?? 20;
  const say = options.onProgress ?? (() => {});
  const tokenizer = await loadTokenizer();
  const r = Math.random().toString(36).slice(2, 10);
  const scope: Scope = { tenant_id: `bench_ctx_${r}`, user_id: `bench_user_${r}` };

  const t0 = performance.now();
  const shortId = await seed(store, scope, shortCount, () => {});
  const longId = await seed(store, scope, longCount, (n) =>
    say(`${options.label}: seeded ${n}/${longCount} messages`),
  );
  const seedMs = performance.now() - t0;

  const samples = { short: [] as number[], long: [] as number[] };
  const last = {
    short: null as Awaited<ReturnType<typeof buildContext>> | null,
    long: null as Awaited<ReturnType<typeof buildContext>> | null,
  };
  for (let i = 0; i < warmup + iterations; i++) {
    for (const which of i % 2 === 0 ? (['short', 'long'] as const) : (['long', 'short'] as const)) {
      const sessionId = which === 'short' ? shortId : longId;
      const start = performance.now();
      const ctx = await buildContext({ store, scope, sessionId, maxTokens, tokenizer });
      const ms = performance.now() - start;
      if (i >= warmup) samples[which].push(ms);
      last[which] = ctx;
    }
  }

  const startFull = performance.now();
  let after = 0;
  for (;;) {
    const page = await store.listMessages(scope, longId, { after_seq: after, limit: 1000 });
    if (page.length === 0) break;
    after = page[page.length - 1]!.seq;
  }
  const fullMs = performance.now() - startFull;

  const stats = (which: 'short' | 'long', history: number) => {
    const sorted = [...samples[which]].sort((a, b) => a - b);
    const ctx = last[which]!;
    return {
      history,
      p50_ms: round(percentile(sorted, 50)),
      p95_ms: round(percentile(sorted, 95)),
      mean_ms: round(sorted.reduce((s, x) => s + x, 0) / sorted.length),
      messages_in_window: ctx.messages.length,
      messages_read: ctx.included.messages_read,
      token_count: ctx.token_count,
    };
  };
  const short = stats('short', shortCount);
  const long = stats('long', longCount);
  await store.deleteSession(scope, shortId);
  await store.deleteSession(scope, longId);
  return {
    store: options.label,
    max_tokens: maxTokens,
    iterations,
    short,
    long,
    ratio_p50: round(long.p50_ms / short.p50_ms),
    ratio_p95: round(long.p95_ms / short.p95_ms),
    full_history_read_ms: round(fullMs),
    seed_ms: Math.round(seedMs),
  };
}
