/**
 * What a run's event log costs a turn at the store: flight bookings of the `rules` model (five turns each,
 * the last one booking with the demo airline), run in-process through the runtime against one store
 * twice, alternating booking by booking: as it is, and through `withoutEventLog`, which writes what the
 * runtime would write without a log (a turn's batches without their `events`, a checkpoint alone with
 * `putCheckpoint`, `appendRunEvents` skipped). The runtime builds its events in both; the difference is the
 * store's part: CPU and wall time of this process per turn, statements sent per turn (each a round trip on
 * PostgreSQL: BEGIN and COMMIT included), and the bytes of the rows the log keeps.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { linkRuntime } from '../../cli/commands/runtime-link.js';
import { runTurn } from '../../runtime/turn.js';
import { openStore } from '../../store/open.js';
import type { Scope, StateStore, TurnBatch, TurnResult } from '../../store/types.js';
import { percentile } from '../checkpoint/measure.js';

export const BOOKING = [
  'I need a flight from Beijing to Shanghai',
  'next Wednesday',
  'business class',
  'my name is Ada Lovelace',
  'yes',
];

/** The store as the runtime would use it without an event log. */
export function withoutEventLog(store: StateStore): StateStore {
  const commitTurn = async (scope: Scope, batch: TurnBatch): Promise<TurnResult> => {
    const { events, ...rest } = batch;
    if (events === undefined) return store.commitTurn(scope, batch);
    if (Object.keys(rest).length === 1 && rest.checkpoint !== undefined) {
      await store.putCheckpoint(scope, rest.checkpoint);
      return { session: null, tasks: [], actions: [], messages: [], checkpoint: null };
    }
    const written = await store.commitTurn(scope, rest);
    // The answer is built by the final event's function: called as the commit would, its event dropped.
    events.final?.(written);
    return written;
  };
  return new Proxy(store, {
    get(target, key) {
      if (key === 'commitTurn') return commitTurn;
      if (key === 'appendRunEvents') return async () => undefined;
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** Counts the statements this process sends: pg's queries, better-sqlite3's statement runs. */
export const statements = { count: 0 };
let counting = false;
export function countStatements(): void {
  if (counting) return;
  counting = true;
  const client = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const query = client.query;
  client.query = function (this: unknown, ...args: unknown[]) {
    statements.count++;
    return query.apply(this, args);
  };
  const db = new Database(':memory:');
  const proto = Object.getPrototypeOf(db.prepare('SELECT 1')) as Record<string, unknown>;
  db.close();
  for (const name of ['run', 'get', 'all', 'iterate']) {
    const original = proto[name] as (...args: unknown[]) => unknown;
    proto[name] = function (this: unknown, ...args: unknown[]) {
      statements.count++;
      return original.apply(this, args);
    };
  }
}

export interface BenchStoreHandle {
  readonly name: string;
  readonly url: string;
  readonly store: StateStore;
  /** Bytes and rows the event log keeps for these sessions. */
  eventBytes(tenant: string): Promise<{ rows: number; bytes: number }>;
  done(): Promise<void>;
}

const COLUMNS = ['tenant_id', 'user_id', 'session_id', 'run_id', 'type', 'data', 'created_at', 'expires_at'];
/** The bytes of a row's text columns, and 4 for its seq. */
const rowBytes = (length: (column: string) => string) => `sum(${COLUMNS.map(length).join(' + ')} + 4)`;

/** A fresh SQLite file or PostgreSQL schema (AGENTSTATE_BENCH_POSTGRES_URL), removed by `done`. */
export async function openCostStore(name: 'sqlite' | 'postgres'): Promise<BenchStoreHandle> {
  if (name === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'agentstate-events-'));
    const file = join(dir, 'bench.db');
    const url = `sqlite:${file}`;
    const store = await openStore(url);
    return {
      name,
      url,
      store,
      async eventBytes(tenant) {
        const db = new Database(file, { readonly: true });
        try {
          const bytes = rowBytes((c) => `length(CAST(${c} AS BLOB))`);
          const sql = `SELECT count(*) AS n, ${bytes} AS b FROM run_events WHERE tenant_id = ?`;
          const row = db.prepare(sql).get(tenant) as { n: number; b: number | null };
          return { rows: row.n, bytes: row.b ?? 0 };
        } finally {
          db.close();
        }
      },
      async done() {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const base = process.env.AGENTSTATE_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const schema = `bench_events_${randomBytes(4).toString('hex')}`;
  const at = new URL(base);
  at.searchParams.set('schema', schema);
  const url = at.toString();
  const store = await openStore(url);
  const admin = async <T>(work: (client: pg.Client) => Promise<T>): Promise<T> => {
    const client = new pg.Client({ connectionString: base });
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  };
  return {
    name,
    url,
    store,
    eventBytes: (tenant) =>
      admin(async (client) => {
        const result = await client.query(
          `SELECT count(*)::int AS n, ${rowBytes((c) => `octet_length(${c})`)}::bigint AS b FROM "${schema}".run_events WHERE tenant_id = $1`,
          [tenant],
        );
        return { rows: result.rows[0].n as number, bytes: Number(result.rows[0].b ?? 0) };
      }),
    async done() {
      await store.close();
      await admin((client) => client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
    },
  };
}

export interface ModeFigures {
  readonly turns: number;
  readonly cpu_ms_per_turn: number;
  readonly wall_ms_p50: number;
  readonly wall_ms_mean: number;
  readonly statements_per_turn: number;
}

export interface CostResult {
  readonly store: string;
  readonly bookings: number;
  readonly on: ModeFigures;
  readonly off: ModeFigures;
  readonly extra_cpu_ms_per_turn: number;
  /** Mean against mean: every turn counted, outliers of a busy machine included. */
  readonly extra_wall_ms_per_turn: number;
  /**
   * The median of the differences between a turn with the log and the same turn (same place in the same
   * conversation) of the booking without it that ran next to it: robust to a machine's load changing.
   */
  readonly extra_wall_ms_paired_p50: number;
  readonly extra_cpu_ms_paired_p50: number;
  readonly extra_statements_per_turn: number;
  readonly event_rows_per_turn: number;
  readonly event_bytes_per_turn: number;
}

interface Samples {
  wall: number[];
  cpus: number[];
  cpu: number;
  statements: number;
}

/** The median of on[i] - off[i]. */
function pairedMedian(on: readonly number[], off: readonly number[]): number {
  const differences = on.map((value, i) => value - (off[i] as number)).sort((a, b) => a - b);
  return percentile(differences, 50);
}

const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

function figures(samples: Samples): ModeFigures {
  const turns = samples.wall.length;
  const sorted = [...samples.wall].sort((a, b) => a - b);
  return {
    turns,
    cpu_ms_per_turn: round(samples.cpu / turns, 3),
    wall_ms_p50: round(percentile(sorted, 50), 3),
    wall_ms_mean: round(sorted.reduce((s, x) => s + x, 0) / turns, 3),
    statements_per_turn: round(samples.statements / turns, 2),
  };
}

export async function runCostBench(
  handle: BenchStoreHandle,
  bookings: number,
  say: (text: string) => void = () => undefined,
): Promise<CostResult> {
  countStatements();
  const dir = mkdtempSync(join(tmpdir(), 'agentstate-events-tools-'));
  const runtime = await linkRuntime(dir);
  const tag = randomBytes(3).toString('hex');
  const stores = { on: handle.store, off: withoutEventLog(handle.store) };
  const tenants = { on: `ev-on-${tag}`, off: `ev-off-${tag}` };
  const samples: Record<'on' | 'off', Samples> = {
    on: { wall: [], cpus: [], cpu: 0, statements: 0 },
    off: { wall: [], cpus: [], cpu: 0, statements: 0 },
  };
  const booking = async (mode: 'on' | 'off', tenant: string, user: string, timed: boolean) => {
    const store = stores[mode];
    const scope: Scope = { tenant_id: tenant, user_id: user };
    const session = await store.createSession(scope, { agent: 'flight_booking' });
    for (const input of BOOKING) {
      const before = statements.count;
      const cpu = process.cpuUsage();
      const started = performance.now();
      await runTurn({ ...runtime.setup, store, scope, sessionId: session.id, input });
      const wall = performance.now() - started;
      const used = process.cpuUsage(cpu);
      if (!timed) continue;
      samples[mode].wall.push(wall);
      samples[mode].cpus.push((used.user + used.system) / 1000);
      samples[mode].cpu += (used.user + used.system) / 1000;
      samples[mode].statements += statements.count - before;
    }
  };
  try {
    for (let i = 0; i < 3; i++) {
      await booking('on', `ev-warm-${tag}`, `w${i}`, false);
      await booking('off', `ev-warm-${tag}`, `x${i}`, false);
    }
    for (let i = 0; i < bookings; i++) {
      // Alternating, and each mode first half of the time.
      const order: ('on' | 'off')[] = i % 2 === 0 ? ['on', 'off'] : ['off', 'on'];
      for (const mode of order) await booking(mode, tenants[mode], `u${i}`, true);
      if ((i + 1) % 10 === 0) say(`${handle.name}: ${i + 1}/${bookings} bookings each way`);
    }
    const kept = await handle.eventBytes(tenants.on);
    const none = await handle.eventBytes(tenants.off);
    if (none.rows !== 0) throw new Error(`the store without a log kept ${none.rows} events`);
    const on = figures(samples.on);
    const off = figures(samples.off);
    return {
      store: handle.name,
      bookings,
      on,
      off,
      extra_cpu_ms_per_turn: round(on.cpu_ms_per_turn - off.cpu_ms_per_turn, 3),
      extra_wall_ms_per_turn: round(on.wall_ms_mean - off.wall_ms_mean, 3),
      extra_wall_ms_paired_p50: round(pairedMedian(samples.on.wall, samples.off.wall), 3),
      extra_cpu_ms_paired_p50: round(pairedMedian(samples.on.cpus, samples.off.cpus), 3),
      extra_statements_per_turn: round(on.statements_per_turn - off.statements_per_turn, 2),
      event_rows_per_turn: round(kept.rows / on.turns, 2),
      event_bytes_per_turn: Math.round(kept.bytes / on.turns),
    };
  } finally {
    await runtime.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
