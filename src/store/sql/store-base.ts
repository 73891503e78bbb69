/**
 * The base of the SQL StateStore: how a call runs (checks first, then a write transaction, a consistent
 * snapshot or a single statement; driver failures become `store_unavailable`), its lifecycle, and the
 * calls that are not about one kind of record (leases, request keys, the sweep).
 */
import { cryptoRandom, systemClock } from '../../core/clock.js';
import { AgentStateError, closedError, storeUnavailable } from '../../core/errors.js';
import type { IdKind } from '../../core/ids.js';
import { Checks } from '../core/checks.js';
import { checkRetention } from '../shared/retention.js';
import * as t from '../types.js';
import { LastCheckpoints, type SqlContext } from './context.js';
import * as co from './coordination.js';
import type { SqlDriver, SqlExecutor } from './executor.js';
import { CursorKey } from './paging.js';
import { countSessions, type DetailedSweep, sweepRetentionRows } from './retention.js';
import * as s from './sessions.js';
import { DeletedTally, inBatches, Pacer } from './sweep-batches.js';

/** Largest number of sessions one sweep may remove. */
export const MAX_SWEEP_LIMIT = 100_000;

/**
 * Most expired memory items, leases and request keys (each) one sweepExpired call removes, whatever its
 * limit (which counts sessions): they go in batches until one comes back short, so a sweep that finds no
 * expired session still removes all of them.
 */
export const MAX_SWEEP_OTHERS = MAX_SWEEP_LIMIT;

const noCheck = () => undefined;

/**
 * `write`: in a transaction. `statement`: one statement that is atomic by itself, sent without a
 * transaction around it (no BEGIN and COMMIT round trips). `read` and `snapshot`: reads, the latter in one
 * snapshot.
 */
type Mode = 'write' | 'statement' | 'read' | 'snapshot';

export abstract class SqlStoreBase {
  readonly capabilities: t.StoreCapabilities = { multiProcess: true, durable: true };
  protected readonly ctx: SqlContext;
  protected readonly v: Checks;
  private closed = false;
  /** Batch sizes of each kind of sweep, learned from how long their transactions take. */
  private readonly pacers: Record<'sessions' | s.ExpiringTable | 'checkpoints' | 'actions' | 'tasks', Pacer>;
  /** Rows the sweeps deleted, per table, since the table was last reclaimed. */
  private readonly deleted = new DeletedTally();
  /**
   * Called with the error of a storage reclaim after a sweep (the store has no logger). The reclaim runs
   * after the sweep's deletes committed: its failure never fails the sweep nor loses its counts, and the
   * tables stay counted for the next one.
   */
  onReclaimError: ((error: unknown) => void) | undefined = undefined;
  private failedReclaims = 0;
  private lastReclaimError: unknown = undefined;

  constructor(
    readonly adapter: string,
    protected readonly driver: SqlDriver,
    options: t.StoreOptions,
    private readonly onClose: () => Promise<void> = () => driver.close(),
  ) {
    this.v = new Checks(adapter);
    this.ctx = {
      adapter,
      v: this.v,
      clock: options.clock ?? systemClock,
      random: options.random ?? cryptoRandom,
      defaultSessionTtlSeconds:
        options.defaultSessionTtlSeconds === undefined
          ? t.DEFAULT_SESSION_TTL_SECONDS
          : this.v.positiveInt(options.defaultSessionTtlSeconds, 'defaultSessionTtlSeconds'),
      lastCheckpoints: new LastCheckpoints(),
      cursorKey: new CursorKey(),
      sessionLock: driver.dialect.name === 'postgres' ? ' FOR KEY SHARE' : '',
      sessionsElsewhere: (options as { readonly sessionsElsewhere?: unknown }).sessionsElsewhere === true,
    };
    const pacer = () => new Pacer(driver.sweepPacing);
    this.pacers = {
      sessions: pacer(),
      memory: pacer(),
      leases: pacer(),
      request_keys: pacer(),
      checkpoints: pacer(),
      actions: pacer(),
      tasks: pacer(),
    };
  }

  /** Checks first (nothing is sent to the database when they fail), then runs `work` in `mode`. */
  protected async do<C, T>(
    mode: Mode,
    check: () => C,
    work: (q: SqlExecutor, checked: C) => Promise<T>,
  ): Promise<T> {
    if (this.closed) throw closedError(this.adapter);
    const checked = check();
    try {
      if (mode === 'read' || mode === 'statement') return await work(this.driver.query, checked);
      if (mode === 'snapshot') return await this.driver.snapshot((q) => work(q, checked));
      return await this.driver.transaction((tx) => work(tx, checked));
    } catch (error) {
      if (error instanceof AgentStateError) throw error;
      if (this.closed) throw closedError(this.adapter);
      if (this.driver.isUniqueViolation(error)) {
        throw new AgentStateError('conflict', `[${this.adapter}] a record with this id already exists`, {
          cause: error,
        });
      }
      throw storeUnavailable(this.adapter, error);
    }
  }
  protected read<T>(
    scope: t.ReadScope,
    id: [unknown, IdKind, string] | null,
    work: (q: SqlExecutor) => Promise<T>,
  ) {
    return this.do(
      'read',
      () => {
        this.v.readScope(scope);
        if (id !== null) this.v.id(...id);
      },
      work,
    );
  }
  protected write<T>(
    scope: t.ReadScope,
    id: [unknown, IdKind, string] | null,
    work: (q: SqlExecutor) => Promise<T>,
  ) {
    return this.do(
      'write',
      () => {
        this.v.readScope(scope);
        if (id !== null) this.v.id(...id);
      },
      work,
    );
  }

  // leases and request keys
  acquireLease(scope: t.Scope, name: string, owner: string, ttl_ms: number) {
    const check = () => {
      this.v.scope(scope);
      this.v.name(name, 'lease name');
      this.v.name(owner, 'owner');
      this.v.positiveInt(ttl_ms, 'ttl_ms');
    };
    return this.do('read', check, (q) => co.acquireLeaseRow(this.ctx, q, scope, name, owner, ttl_ms));
  }
  releaseLease(scope: t.Scope, name: string, owner: string) {
    const check = () => {
      this.v.scope(scope);
      this.v.name(name, 'lease name');
      return this.v.name(owner, 'owner');
    };
    return this.do('read', check, (q) => co.releaseLeaseRow(this.ctx, q, scope, name, owner));
  }
  claimRequestKey(
    scope: t.Scope,
    key: string,
    hash: string,
    ttl_seconds: number,
    in_progress_ttl_seconds: number = ttl_seconds,
  ) {
    const check = () => {
      this.v.scope(scope);
      this.v.name(key, 'request key');
      this.v.name(hash, 'request_hash');
      this.v.positiveInt(ttl_seconds, 'ttl_seconds');
      this.v.positiveInt(in_progress_ttl_seconds, 'in_progress_ttl_seconds');
    };
    return this.do('read', check, (q) =>
      co.claimRequestKeyRow(this.ctx, q, scope, key, hash, ttl_seconds, in_progress_ttl_seconds),
    );
  }
  completeRequestKey(scope: t.Scope, key: string, response: t.StoredResponse) {
    const check = (): t.StoredResponse => {
      this.v.scope(scope);
      this.v.name(key, 'request key');
      this.v.record(response, 'response');
      const status = response.status;
      if (typeof status !== 'number' || !Number.isInteger(status) || status < 100 || status > 599) {
        this.v.fail(`response.status must be an HTTP status from 100 to 599, got ${String(status)}`);
      }
      return { status, body: this.v.json(response.body, 'response.body') };
    };
    return this.do('write', check, (tx, r) => co.completeRequestKeyRow(this.ctx, tx, scope, key, r));
  }
  releaseRequestKey(scope: t.Scope, key: string) {
    const check = () => {
      this.v.scope(scope);
      return this.v.name(key, 'request key');
    };
    return this.do('read', check, (q) => co.releaseRequestKeyRow(q, scope, key));
  }

  // expiry: short transactions paced by the driver (sweep-batches.ts), then the storage back
  async sweepExpired(limit: number): Promise<number> {
    const max = await this.do(
      'read',
      () => {
        const max = this.v.positiveInt(limit, 'limit');
        if (max > MAX_SWEEP_LIMIT) this.v.fail(`limit must be at most ${MAX_SWEEP_LIMIT}, got ${max}`);
        return max;
      },
      async (_q, checked) => checked,
    );
    const d = this.driver.dialect;
    const between = this.between;
    const removed = await inBatches({
      pacer: this.pacers.sessions,
      limit: max,
      step: async (size) => {
        const swept = await this.do('write', noCheck, (tx) => s.sweepSessions(this.ctx, tx, size, d));
        this.deleted.add('sessions', swept.sessions);
        this.deleted.add('messages', swept.messages);
        return swept.sessions;
      },
      between,
    });
    for (const table of s.EXPIRING_TABLES) {
      const gone = await inBatches({
        pacer: this.pacers[table],
        limit: MAX_SWEEP_OTHERS,
        step: (size) => this.do('write', noCheck, (tx) => s.sweepOthers(this.ctx, tx, table, size, d)),
        between,
      });
      this.deleted.add(table, gone);
    }
    // Once per sweep (its last, short call), not after every batch: the storage comes back when it is done.
    if (removed < max) await this.reclaim();
    return removed;
  }

  /** What runs between two sweep transactions: the driver's checkpoint, when it has one. */
  private get between(): (() => Promise<void>) | undefined {
    const checkpoint = this.driver.checkpoint?.bind(this.driver);
    return checkpoint === undefined ? undefined : () => this.do('read', noCheck, () => checkpoint());
  }

  /**
   * Hands the rows deleted since the last reclaim to the driver, which decides what is worth giving back.
   * Never throws: an error goes to `onReclaimError` and `reclaimErrors` (the sweep before it stands).
   */
  private async reclaim(): Promise<void> {
    const reclaim = this.driver.reclaim?.bind(this.driver);
    if (reclaim === undefined) return;
    const deleted = this.deleted.snapshot();
    try {
      const done = await this.do('read', noCheck, () => reclaim(deleted));
      this.deleted.settle(deleted, done);
    } catch (error) {
      this.failedReclaims += 1;
      this.lastReclaimError = error;
      try {
        this.onReclaimError?.(error);
      } catch {
        // the hook's own failure changes nothing of the sweep
      }
    }
  }

  /** How many storage reclaims after sweeps failed since the store opened, and the last one's error. */
  get reclaimErrors(): { readonly count: number; readonly last: unknown } {
    return { count: this.failedReclaims, last: this.lastReclaimError };
  }

  sessionStats() {
    return this.do(
      'snapshot',
      () => undefined,
      (q) => countSessions(this.ctx, q),
    );
  }

  async sweepRetention(cutoffs: t.RetentionCutoffs, limit: number): Promise<t.RetentionSweep> {
    const { tasks, actions, checkpoints } = await this.sweepRetentionDetailed(cutoffs, limit);
    return { tasks, actions, checkpoints };
  }

  /** sweepRetention, also naming the tasks it deleted. */
  async sweepRetentionDetailed(cutoffs: t.RetentionCutoffs, limit: number): Promise<DetailedSweep> {
    const checked = await this.do(
      'read',
      () => checkRetention(this.adapter, cutoffs, limit),
      async (_q, c) => c,
    );
    const write = <T>(work: (tx: SqlExecutor) => Promise<T>) => this.do('write', noCheck, work);
    const run = {
      write,
      between: this.between,
      dialect: this.driver.dialect,
      pacers: this.pacers,
      tally: this.deleted,
    };
    const swept = await sweepRetentionRows(run, checked);
    if (Math.max(swept.tasks, swept.actions, swept.checkpoints) < checked.limit) await this.reclaim();
    return swept;
  }

  async ping(): Promise<boolean> {
    if (this.closed) throw closedError(this.adapter);
    try {
      return await this.driver.ping();
    } catch {
      return false;
    }
  }
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.onClose();
  }
}
