/**
 * The store core's frame: how a call runs (checks first, nothing reaching the driver when one fails; then
 * one driver transaction or read; driver failures become `store_unavailable`), the lifecycle, and the calls
 * that are not about one kind of record (leases, request keys, sweeps, counts). CoreStore adds the rest.
 */
import { cryptoRandom, systemClock } from '../../core/clock.js';
import { AgentStateError, closedError, storeUnavailable } from '../../core/errors.js';
import type { IdKind } from '../../core/ids.js';
import type { SessionStatus } from '../../core/model.js';
import { traceStoreCalls } from '../../observability/tracing-store.js';
import { checkRetention } from '../shared/retention.js';
import * as t from '../types.js';
import { Checks } from './checks.js';
import type { TurnStore } from './commit-turn.js';
import type { CoreEnv, Op, WriteOp } from './context.js';
import * as coordination from './coordination.js';
import type { DriverReads, DriverTx, StoreDriver } from './driver.js';
import type { LeasingStore } from './session-head.js';

/** For a call whose work makes one write, a compare-and-swap after its reads (see StoreDriver.transaction). */
const single = () => true;

/** Largest number of sessions one sweep may remove. */
export const MAX_SWEEP_LIMIT = 100_000;

export abstract class StoreBase {
  readonly adapter: string;
  readonly capabilities: t.StoreCapabilities;
  protected readonly env: CoreEnv;
  protected readonly v: Checks;
  /** The calls a composition beside the core runs on (a leased head, a turn). */
  protected readonly lent: LeasingStore & TurnStore;
  private key: Promise<Buffer> | null = null;
  private closed = false;

  constructor(
    protected readonly driver: StoreDriver,
    options: t.StoreOptions = {},
  ) {
    this.adapter = driver.name;
    this.capabilities = driver.capabilities;
    this.v = new Checks(driver.name);
    this.env = {
      cursorKey: () => this.cursorKey(),
      adapter: driver.name,
      v: this.v,
      clock: options.clock ?? systemClock,
      random: options.random ?? cryptoRandom,
      defaultTtlSeconds:
        options.defaultSessionTtlSeconds === undefined
          ? t.DEFAULT_SESSION_TTL_SECONDS
          : this.v.positiveInt(options.defaultSessionTtlSeconds, 'defaultSessionTtlSeconds'),
      runEventTtlSeconds:
        options.runEventTtlSeconds === undefined
          ? t.DEFAULT_RUN_EVENT_TTL_SECONDS
          : this.v.positiveInt(options.runEventTtlSeconds, 'runEventTtlSeconds'),
    };
    this.lent = {
      driver,
      acquireLease: (...args) => this.acquireLease(...args),
      releaseLease: (...args) => this.releaseLease(...args),
      write: (check, work) => this.write(check, work),
      read: (work) => this.read(() => null, work),
    };
    // Every public call in a span of its own, when a tracer provider is registered (else nothing is added).
    traceStoreCalls(this, StoreBase.prototype, driver.name);
  }

  /** The driver's cursor key, asked once (again after a failure). */
  private cursorKey(): Promise<Buffer> {
    if (this.key === null) {
      const asking = this.driver.cursorKey();
      asking.catch(() => {
        if (this.key === asking) this.key = null;
      });
      this.key = asking;
    }
    return this.key;
  }

  /** A driver failure that is not the contract's own becomes `store_unavailable` (or `closed`). */
  private failure(error: unknown): never {
    if (error instanceof AgentStateError) throw error;
    if (this.closed) throw closedError(this.adapter);
    throw storeUnavailable(this.adapter, error);
  }

  /** Checks (synchronously, before anything is sent), then `work` in one transaction. */
  protected async write<C, T>(
    check: () => C,
    work: (op: WriteOp, checked: C) => Promise<T>,
    single?: (checked: C) => boolean,
  ): Promise<T> {
    if (this.closed) throw closedError(this.adapter);
    const checked = check();
    try {
      const env = this.env;
      const options = single?.(checked) === true ? { single: true } : undefined;
      return await this.driver.transaction(
        (tx: DriverTx) => work({ env, tx, now: env.clock.now() }, checked),
        options,
      );
    } catch (error) {
      return this.failure(error);
    }
  }

  protected async read<C, T>(check: () => C, work: (op: Op, checked: C) => Promise<T>): Promise<T> {
    if (this.closed) throw closedError(this.adapter);
    const checked = check();
    try {
      const env = this.env;
      return await this.driver.read((tx: DriverReads) => work({ env, tx, now: env.clock.now() }, checked));
    } catch (error) {
      return this.failure(error);
    }
  }

  /** The scope checked, and an id of the kind when given. */
  protected scoped(scope: t.ReadScope, id?: [unknown, IdKind, string]): void {
    this.v.readScope(scope);
    if (id !== undefined) this.v.id(...id);
  }

  // coordination
  acquireLease(scope: t.Scope, name: string, owner: string, ttl_ms: number): Promise<t.Lease | null> {
    const check = () => {
      this.lease(scope, name, owner);
      this.v.positiveInt(ttl_ms, 'ttl_ms');
    };
    return this.write(check, (op) => coordination.acquireLease(op, scope, name, owner, ttl_ms), single);
  }
  releaseLease(scope: t.Scope, name: string, owner: string): Promise<boolean> {
    return this.write(
      () => this.lease(scope, name, owner),
      (op) => coordination.releaseLease(op, scope, name, owner),
      single,
    );
  }
  private lease(scope: t.Scope, name: string, owner: string): void {
    this.v.scope(scope);
    this.v.name(name, 'lease name');
    this.v.name(owner, 'owner');
  }
  claimRequestKey(
    scope: t.Scope,
    key: string,
    hash: string,
    ttl_seconds: number,
    in_progress_ttl_seconds: number = ttl_seconds,
  ): Promise<t.RequestKeyClaim> {
    const check = () => {
      this.requestKey(scope, key);
      this.v.name(hash, 'request_hash');
      this.v.positiveInt(ttl_seconds, 'ttl_seconds');
      this.v.positiveInt(in_progress_ttl_seconds, 'in_progress_ttl_seconds');
    };
    return this.write(
      check,
      (op) => coordination.claimRequestKey(op, scope, key, hash, ttl_seconds, in_progress_ttl_seconds),
      single,
    );
  }
  renewRequestKey(
    scope: t.Scope,
    key: string,
    hash: string,
    in_progress_ttl_seconds: number,
  ): Promise<boolean> {
    const check = () => {
      this.requestKey(scope, key);
      this.v.name(hash, 'request_hash');
      this.v.positiveInt(in_progress_ttl_seconds, 'in_progress_ttl_seconds');
    };
    return this.write(
      check,
      (op) => coordination.renewRequestKey(op, scope, key, hash, in_progress_ttl_seconds),
      single,
    );
  }
  completeRequestKey(scope: t.Scope, key: string, response: t.StoredResponse): Promise<void> {
    const check = () => {
      this.requestKey(scope, key);
      return coordination.checkResponse(this.env, response);
    };
    return this.write(
      check,
      (op, checked) => coordination.completeRequestKey(op, scope, key, checked),
      single,
    );
  }
  releaseRequestKey(scope: t.Scope, key: string): Promise<void> {
    return this.write(
      () => this.requestKey(scope, key),
      (op) => op.tx.deleteRequestKey(scope, key),
      single,
    );
  }
  private requestKey(scope: t.Scope, key: string): void {
    this.v.scope(scope);
    this.v.name(key, 'request key');
  }

  // maintenance
  async sweepExpired(limit: number): Promise<number> {
    if (this.closed) throw closedError(this.adapter);
    const max = this.v.positiveInt(limit, 'limit');
    if (max > MAX_SWEEP_LIMIT) this.v.fail(`limit must be at most ${MAX_SWEEP_LIMIT}, got ${max}`);
    return this.maintain(() => this.driver.sweepExpired(this.env.clock.now(), max));
  }
  sessionStats(): Promise<Record<SessionStatus, number>> {
    return this.maintain(() => this.driver.sessionStats(this.env.clock.now()));
  }
  actionStats(): Promise<t.ActionStats> {
    return this.maintain(() => this.driver.actionStats());
  }
  async sweepRetention(cutoffs: t.RetentionCutoffs, limit: number): Promise<t.RetentionSweep> {
    if (this.closed) throw closedError(this.adapter);
    const checked = checkRetention(this.adapter, cutoffs, limit);
    return this.maintain(() => this.driver.sweepRetention(checked));
  }
  private async maintain<T>(work: () => Promise<T>): Promise<T> {
    if (this.closed) throw closedError(this.adapter);
    try {
      return await work();
    } catch (error) {
      return this.failure(error);
    }
  }

  async ping(): Promise<boolean> {
    if (this.closed) throw closedError(this.adapter);
    return this.driver.ping();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.driver.close();
  }
}
