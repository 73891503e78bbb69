/**
 * A child process for the durable-run kill tests: runs (or continues) one durable run on a store URL and
 * prints JSON lines: `point` at each kill point it passes, `quote`/`offer` with the values its steps gave,
 * and `result` or `error` at the end. At the point named in DURABLE_KILL_AT it SIGKILLs itself.
 *
 * Kill points: `after-quote`, `after-charge`, `<action>:before_effect`, `<action>:after_effect` (inside the
 * call, before or after the effect is appended to the effect log), `write:N` (right after the N-th store
 * write of this process: a commit or a checkpoint).
 *
 * The tools append one line per effect to the effect log and never deduplicate by key: only the kernel's
 * record-before-run and its recovery through lookup keep an effect from happening twice.
 *
 * argv: storeUrl tenant user sessionId effectLog program(booking|confirm|sleeper) [inputJson]
 * env: DURABLE_KILL_AT, DURABLE_LOOKUP (`ambiguous` for the ship action), DURABLE_OWNER (lease owner),
 * DURABLE_CLOCK_OFFSET_MS (added to the system clock), DURABLE_LEASE_TTL_MS, DURABLE_LEASE_WAIT_MS
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import { isAgentStateError } from '../../src/core/errors.js';
import type { JsonValue } from '../../src/core/json.js';
import { type DurableContext, durableRun, type LookupAnswer } from '../../src/durable/index.js';
import { openStore } from '../../src/store/open.js';
import type { StateStore } from '../../src/store/types.js';

const [url, tenant, user, sessionId, effectLog, program, inputJson] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string,
  string | undefined,
];
const killAt = process.env.DURABLE_KILL_AT ?? '';
const lookupMode = process.env.DURABLE_LOOKUP ?? 'honest';

function emit(event: Record<string, JsonValue>): void {
  process.stdout.write(`${JSON.stringify(event)}\n`);
}

function point(name: string): void {
  emit({ event: 'point', point: name });
  if (name === killAt) process.kill(process.pid, 'SIGKILL');
}

const inner = await openStore(url);
let writes = 0;
const store: StateStore = new Proxy(inner, {
  get(target, prop, receiver) {
    const value = Reflect.get(target, prop, receiver);
    if (typeof value !== 'function') return value;
    if (prop === 'commitTurn' || prop === 'putCheckpoint') {
      return async (...args: unknown[]) => {
        const result = await Reflect.apply(value, target, args);
        writes++;
        point(`write:${writes}`);
        return result;
      };
    }
    return value.bind(target);
  },
});

interface Effect {
  readonly step: string;
  readonly key: string;
  readonly result: string;
}

function effects(): Effect[] {
  if (!existsSync(effectLog)) return [];
  return readFileSync(effectLog, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Effect);
}

/** A tool whose effect is a line in the effect log; its lookup reads the log. */
function tool(step: string) {
  return {
    run: async (key: string) => {
      point(`${step}:before_effect`);
      const result = `${step}-${key.slice(-8)}`;
      appendFileSync(effectLog, `${JSON.stringify({ step, key, result })}\n`);
      point(`${step}:after_effect`);
      return result;
    },
    lookup: async (key: string): Promise<LookupAnswer<string>> => {
      if (step === 'ship' && lookupMode === 'ambiguous')
        return { found: 'ambiguous', reason: 'the warehouse does not say' };
      const found = effects().find((effect) => effect.step === step && effect.key === key);
      return found === undefined ? { found: false } : { found: true, result: found.result };
    },
  };
}

async function booking(ctx: DurableContext) {
  const at = await ctx.now();
  const quote = await ctx.step('quote', () => {
    appendFileSync(`${effectLog}.calls`, 'quote\n');
    return { price: 120, token: Math.random() };
  });
  emit({ event: 'quote', value: { at, quote } });
  point('after-quote');
  const seat = await ctx.random();
  const charge = await ctx.action('charge', { amount: quote.price }, tool('charge'));
  point('after-charge');
  const ticket = await ctx.action('ship', { receipt: charge }, tool('ship'));
  return { at, quote, seat, charge, ticket };
}

async function confirm(ctx: DurableContext) {
  const offer = await ctx.step('offer', () => {
    appendFileSync(`${effectLog}.calls`, 'offer\n');
    return { seat: '12A', token: Math.random() };
  });
  emit({ event: 'offer', value: offer });
  const reply = await ctx.waitForInput({
    prompt: 'Book seat 12A?',
    schema: z.object({ confirm: z.boolean() }),
  });
  if (!reply.confirm) return { offer, booked: null };
  const booked = await ctx.action('book', { seat: offer.seat }, tool('book'));
  return { offer, booked };
}

/** Sleeps an hour: a resumed process whose clock has passed the stored deadline does not wait. */
async function sleeper(ctx: DurableContext) {
  const before = await ctx.now();
  await ctx.sleep(3_600_000);
  return { before, after: await ctx.now() };
}

const offset = Number(process.env.DURABLE_CLOCK_OFFSET_MS ?? '0');

try {
  const options = {
    scope: { tenant_id: tenant, user_id: user },
    sessionId,
    key: program,
    ...(inputJson === undefined ? {} : { input: JSON.parse(inputJson) as JsonValue }),
    retry: { baseDelayMs: 1, maxDelayMs: 5, timeoutMs: 10_000 },
    lease: {
      owner: process.env.DURABLE_OWNER ?? 'durable-child',
      ttlMs: Number(process.env.DURABLE_LEASE_TTL_MS ?? '10000'),
      waitMs: Number(process.env.DURABLE_LEASE_WAIT_MS ?? '0'),
    },
    clock: { now: () => Date.now() + offset },
  };
  const result =
    program === 'booking'
      ? await durableRun(store, options, booking)
      : program === 'confirm'
        ? await durableRun(store, options, confirm)
        : await durableRun(store, options, sleeper);
  emit({ event: 'result', result: JSON.parse(JSON.stringify(result)) as JsonValue });
} catch (error) {
  emit({
    event: 'error',
    code: isAgentStateError(error) ? error.code : 'error',
    message: error instanceof Error ? error.message : String(error),
  });
  process.exitCode = 2;
} finally {
  await inner.close();
}
