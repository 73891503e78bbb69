/**
 * The per-test context every concern file uses: a freshly opened store on a ManualClock, and fresh random
 * tenant and user ids, so tests share a backing database safely and never depend on what is already there.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach } from 'vitest';
import { ManualClock } from '../../core/clock.js';
import type { ReadScope, Scope, StateStore } from '../../store/types.js';
import type { StoreHarness } from './harness.js';

export interface Ctx {
  store: StateStore;
  clock: ManualClock;
  /** The user most tests act as. */
  scope: Scope;
  /** The whole tenant of `scope` (a tenant key). */
  tenant: ReadScope;
  /** Another user of the same tenant. */
  neighbour: Scope;
  /** A user of another tenant. */
  stranger: Scope;
}

export function randomTenant(): string {
  return `t_${randomUUID().replaceAll('-', '')}`;
}

export function randomUser(): string {
  return `u_${randomUUID().replaceAll('-', '')}`;
}

/** A start time in the recent past, whole seconds, so ISO timestamps are easy to compare. */
export function startTime(): number {
  return Math.floor(Date.now() / 1000) * 1000 - 3_600_000;
}

/**
 * Registers beforeEach/afterEach hooks that open a store for every test and close it after.
 * The returned object is filled in before each test runs.
 */
export function useStore(harness: StoreHarness): Ctx {
  const ctx = {} as Ctx;
  beforeEach(async () => {
    const clock = new ManualClock(startTime());
    const tenant_id = randomTenant();
    ctx.clock = clock;
    ctx.scope = { tenant_id, user_id: randomUser() };
    ctx.tenant = { tenant_id };
    ctx.neighbour = { tenant_id, user_id: randomUser() };
    ctx.stranger = { tenant_id: randomTenant(), user_id: randomUser() };
    ctx.store = await harness.open(clock);
  });
  afterEach(async () => {
    await ctx.store?.close();
  });
  return ctx;
}
