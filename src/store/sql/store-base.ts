/**
 * The base of the SQL StateStore: how a call runs (checks first, then a write transaction, a consistent
 * snapshot or a single statement; driver failures become `store_unavailable`), its lifecycle, and the
 * calls that are not about one kind of record (leases, request keys, the sweep).
 */
import { cryptoRandom, systemClock } from '../../core/clock.js';
import { AgentStateError, closedError, storeUnavailable } from '../../core/errors.js';
import type { IdKind } from '../../core/ids.js';
import { checkRetention } from '../shared/retention.js';
import * as t from '../types.js';
import type { SqlContext } from './context.js';
import * as co from './coordination.js';
import type { SqlDriver, SqlExecutor } from './executor.js';
import { countSessions, type DetailedSweep, sweepRetentionRows } from './retention.js';
import * as s from './sessions.js';
import { Checks } from './validate.js';

/** Largest number of sessions one sweep may remove. */
export const MAX_SWEEP_LIMIT = 100_000;
const SWEEP_BATCH = 500;

type Mode = 'write' | 'read' | 'snapshot';

export abstract class SqlStoreBase {
  readonly capabilities: t.StoreCapabilities = { multiProcess: true, durable: true };
  protected readonly ctx: SqlContext;
  protected readonly v: Checks;
  private closed = false;

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
      if (mode === 'read') return await work(this.driver.query, checked);
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

  // expiry: batches of SWEEP_BATCH sessions, each in its own short transaction
  async sweepExpired(limit: number): Promise<number> {
    const check = () => {
      const max = this.v.positiveInt(limit, 'limit');
      if (max > MAX_SWEEP_LIMIT) this.v.fail(`limit must be at most ${MAX_SWEEP_LIMIT}, got ${max}`);
      return max;
    };
    const claim = this.driver.dialect.claimRows;
    let removed = 0;
    for (;;) {
      const batch = Math.min(SWEEP_BATCH, limit - removed);
      const done = await this.do('write', check, (tx) => s.sweepSessions(this.ctx, tx, batch, claim));
      removed += done;
      if (done < batch || removed >= limit) break;
    }
    await this.do('write', check, (tx) => s.sweepOthers(this.ctx, tx));
    // Once per sweep (its last, short batch), not after every batch: giving pages back moves pages.
    if (removed < limit && this.driver.reclaim !== undefined)
      await this.do('read', check, () => this.reclaim());
    return removed;
  }

  private async reclaim(): Promise<void> {
    await this.driver.reclaim?.();
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
    const write = <T>(work: (tx: SqlExecutor) => Promise<T>) =>
      this.do(
        'write',
        () => checked,
        (tx) => work(tx),
      );
    const swept = await sweepRetentionRows(write, checked, this.driver.dialect.claimRows);
    const total = swept.tasks + swept.actions + swept.checkpoints;
    const short = Math.max(swept.tasks, swept.actions, swept.checkpoints) < limit;
    if (total > 0 && short && this.driver.reclaim !== undefined)
      await this.do(
        'read',
        () => checked,
        () => this.reclaim(),
      );
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
