/**
 * Request keys (HTTP Idempotency-Key). Rules: the first claim of a key is `new`; a claim with the same
 * request hash is `in_progress` until completed, then `done` with the stored response; a different hash is
 * `mismatch`; a released key can be claimed anew; a key lives ttl_seconds (counted from the claim, renewed
 * by the completion) and is then claimable as `new`; completing a key that is not claimed is `not_found`;
 * keys are per tenant and user. Renewing an unfinished claim with its hash moves its in-progress expiry to
 * now + the TTL given; renewing a key that is not in progress with that hash (completed, released, expired,
 * taken by another, never claimed) is false and changes nothing.
 */
import { describe, expect, it } from 'vitest';
import type { Ctx } from './context.js';
import { expectError, expectInvalid } from './expect.js';
import { uniqueKey } from './fixtures.js';

export function requestKeyTests(t: Ctx): void {
  describe('request keys', () => {
    it('new, then in progress, then done with the stored response', async () => {
      const key = uniqueKey('req');
      expect(await t.store.claimRequestKey(t.scope, key, 'h1', 86_400)).toEqual({ state: 'new' });
      expect(await t.store.claimRequestKey(t.scope, key, 'h1', 86_400)).toEqual({ state: 'in_progress' });
      const body = { session: { id: 'sess_x' }, items: [1, 2, { deep: null }] };
      await t.store.completeRequestKey(t.scope, key, { status: 201, body });
      expect(await t.store.claimRequestKey(t.scope, key, 'h1', 86_400)).toEqual({
        state: 'done',
        response: { status: 201, body },
      });
    });

    it('an unfinished claim expires after in_progress_ttl_seconds; a completed one lives ttl_seconds', async () => {
      const dead = uniqueKey('req');
      expect(await t.store.claimRequestKey(t.scope, dead, 'h1', 86_400, 10)).toEqual({ state: 'new' });
      t.clock.advance(9_999);
      expect(await t.store.claimRequestKey(t.scope, dead, 'h1', 86_400, 10)).toEqual({
        state: 'in_progress',
      });
      t.clock.advance(1);
      expect(await t.store.claimRequestKey(t.scope, dead, 'h1', 86_400, 10)).toEqual({ state: 'new' });
      const done = uniqueKey('req');
      await t.store.claimRequestKey(t.scope, done, 'h1', 3600, 10);
      t.clock.advance(5_000);
      await t.store.completeRequestKey(t.scope, done, { status: 201, body: { ok: true } });
      t.clock.advance(3_599_000);
      expect(await t.store.claimRequestKey(t.scope, done, 'h1', 3600, 10)).toEqual({
        state: 'done',
        response: { status: 201, body: { ok: true } },
      });
      await expectInvalid(
        t.store,
        t.store.claimRequestKey(t.scope, uniqueKey('req'), 'h1', 3600, 0),
        'in_progress_ttl_seconds',
      );
    });

    it('a different request hash is a mismatch, before and after completion', async () => {
      const key = uniqueKey('req');
      await t.store.claimRequestKey(t.scope, key, 'h1', 3600);
      expect(await t.store.claimRequestKey(t.scope, key, 'h2', 3600)).toEqual({ state: 'mismatch' });
      await t.store.completeRequestKey(t.scope, key, { status: 200, body: null });
      expect(await t.store.claimRequestKey(t.scope, key, 'h2', 3600)).toEqual({ state: 'mismatch' });
    });

    it('release lets the key be claimed anew (a failed request may be retried)', async () => {
      const key = uniqueKey('req');
      await t.store.claimRequestKey(t.scope, key, 'h1', 3600);
      await t.store.releaseRequestKey(t.scope, key);
      expect(await t.store.claimRequestKey(t.scope, key, 'h2', 3600)).toEqual({ state: 'new' });
      await t.store.releaseRequestKey(t.scope, uniqueKey('never-claimed'));
    });

    it('a key is kept ttl_seconds and then forgotten', async () => {
      const key = uniqueKey('req');
      await t.store.claimRequestKey(t.scope, key, 'h1', 60);
      t.clock.advance(30_000);
      await t.store.completeRequestKey(t.scope, key, { status: 200, body: 'ok' });
      t.clock.advance(59_000);
      expect((await t.store.claimRequestKey(t.scope, key, 'h1', 60)).state).toBe('done');
      t.clock.advance(1000);
      expect(await t.store.claimRequestKey(t.scope, key, 'h2', 60)).toEqual({ state: 'new' });
    });

    it('an unfinished claim expires too', async () => {
      const key = uniqueKey('req');
      await t.store.claimRequestKey(t.scope, key, 'h1', 10);
      t.clock.advance(9999);
      expect((await t.store.claimRequestKey(t.scope, key, 'h1', 10)).state).toBe('in_progress');
      t.clock.advance(1);
      expect((await t.store.claimRequestKey(t.scope, key, 'h1', 10)).state).toBe('new');
    });

    it('renew keeps an unfinished claim in progress past its first expiry', async () => {
      const key = uniqueKey('req');
      expect(await t.store.claimRequestKey(t.scope, key, 'h1', 86_400, 10)).toEqual({ state: 'new' });
      t.clock.advance(8_000);
      expect(await t.store.renewRequestKey(t.scope, key, 'h1', 10)).toBe(true);
      t.clock.advance(8_000); // 16 s after the claim: past its first expiry, within the renewed one
      expect(await t.store.claimRequestKey(t.scope, key, 'h1', 86_400, 10)).toEqual({
        state: 'in_progress',
      });
      expect(await t.store.claimRequestKey(t.scope, key, 'h2', 86_400, 10)).toEqual({ state: 'mismatch' });
      expect(await t.store.renewRequestKey(t.scope, key, 'h1', 10)).toBe(true);
      t.clock.advance(9_999);
      expect((await t.store.claimRequestKey(t.scope, key, 'h1', 86_400, 10)).state).toBe('in_progress');
      t.clock.advance(1);
      // Not renewed in time: free again, as a claim whose holder died.
      expect(await t.store.claimRequestKey(t.scope, key, 'h1', 86_400, 10)).toEqual({ state: 'new' });
      // A renewed claim still completes, and is then kept its whole ttl_seconds.
      t.clock.advance(5_000);
      expect(await t.store.renewRequestKey(t.scope, key, 'h1', 10)).toBe(true);
      await t.store.completeRequestKey(t.scope, key, { status: 201, body: { ok: true } });
      t.clock.advance(86_399_000);
      expect(await t.store.claimRequestKey(t.scope, key, 'h1', 86_400, 10)).toEqual({
        state: 'done',
        response: { status: 201, body: { ok: true } },
      });
    });

    it('renew is false, changing nothing, when the claim is no longer in progress with that hash', async () => {
      const s = t.store;
      // Completed: stays done, and its expiry is the completion's.
      const done = uniqueKey('req');
      await s.claimRequestKey(t.scope, done, 'h1', 60, 10);
      await s.completeRequestKey(t.scope, done, { status: 200, body: 'kept' });
      expect(await s.renewRequestKey(t.scope, done, 'h1', 3600)).toBe(false);
      t.clock.advance(60_000);
      expect(await s.claimRequestKey(t.scope, done, 'h2', 60, 10)).toEqual({ state: 'new' });
      // Released: stays free.
      const released = uniqueKey('req');
      await s.claimRequestKey(t.scope, released, 'h1', 60, 10);
      await s.releaseRequestKey(t.scope, released);
      expect(await s.renewRequestKey(t.scope, released, 'h1', 10)).toBe(false);
      expect(await s.claimRequestKey(t.scope, released, 'h2', 60, 10)).toEqual({ state: 'new' });
      // Never claimed: nothing is made.
      const never = uniqueKey('req');
      expect(await s.renewRequestKey(t.scope, never, 'h1', 10)).toBe(false);
      expect(await s.claimRequestKey(t.scope, never, 'h2', 60, 10)).toEqual({ state: 'new' });
      // Expired: not revived.
      const lapsed = uniqueKey('req');
      await s.claimRequestKey(t.scope, lapsed, 'h1', 60, 10);
      t.clock.advance(10_000);
      expect(await s.renewRequestKey(t.scope, lapsed, 'h1', 10)).toBe(false);
      expect(await s.claimRequestKey(t.scope, lapsed, 'h2', 60, 10)).toEqual({ state: 'new' });
      // Expired and taken by another request: the other's claim is untouched.
      const taken = uniqueKey('req');
      await s.claimRequestKey(t.scope, taken, 'h1', 60, 10);
      t.clock.advance(10_000);
      expect(await s.claimRequestKey(t.scope, taken, 'h2', 60, 10)).toEqual({ state: 'new' });
      t.clock.advance(5_000);
      expect(await s.renewRequestKey(t.scope, taken, 'h1', 10)).toBe(false);
      t.clock.advance(4_999);
      expect(await s.claimRequestKey(t.scope, taken, 'h2', 60, 10)).toEqual({ state: 'in_progress' });
      t.clock.advance(1);
      expect(await s.claimRequestKey(t.scope, taken, 'h2', 60, 10)).toEqual({ state: 'new' });
      // Another hash: false, and the claim expires when it would have.
      const other = uniqueKey('req');
      await s.claimRequestKey(t.scope, other, 'h1', 60, 10);
      expect(await s.renewRequestKey(t.scope, other, 'h2', 3600)).toBe(false);
      t.clock.advance(9_999);
      expect(await s.claimRequestKey(t.scope, other, 'h1', 60, 10)).toEqual({ state: 'in_progress' });
      t.clock.advance(1);
      expect(await s.claimRequestKey(t.scope, other, 'h1', 60, 10)).toEqual({ state: 'new' });
      // Another user's key of the same name is not ours to renew.
      const mine = uniqueKey('req');
      await s.claimRequestKey(t.scope, mine, 'h1', 60, 10);
      expect(await s.renewRequestKey(t.neighbour, mine, 'h1', 3600)).toBe(false);
      expect(await s.claimRequestKey(t.neighbour, mine, 'h1', 60, 10)).toEqual({ state: 'new' });
    });

    it('renew refuses bad input, naming the field, and changes nothing', async () => {
      const s = t.store;
      const key = uniqueKey('req');
      await s.claimRequestKey(t.scope, key, 'h1', 60, 10);
      await expectInvalid(s, s.renewRequestKey(t.scope, '', 'h1', 10), 'request key');
      await expectInvalid(s, s.renewRequestKey(t.scope, key, '', 10), 'request_hash');
      await expectInvalid(s, s.renewRequestKey(t.scope, key, 'h1', 0), 'in_progress_ttl_seconds');
      await expectInvalid(s, s.renewRequestKey(t.scope, key, 'h1', 1.5), 'in_progress_ttl_seconds');
      await expectInvalid(s, s.renewRequestKey(t.scope, key, 'h1', 1e12), 'in_progress_ttl_seconds');
      await expectInvalid(
        s,
        s.renewRequestKey({ tenant_id: '', user_id: t.scope.user_id }, key, 'h1', 10),
        'tenant_id',
      );
      t.clock.advance(10_000);
      expect(await s.claimRequestKey(t.scope, key, 'h1', 60, 10)).toEqual({ state: 'new' });
    });

    it('exactly one of many concurrent claims of one key is new', async () => {
      const key = uniqueKey('req');
      const claims = await Promise.all(
        Array.from({ length: 10 }, () => t.store.claimRequestKey(t.scope, key, 'h1', 3600)),
      );
      expect(claims.filter((c) => c.state === 'new')).toHaveLength(1);
      expect(claims.filter((c) => c.state === 'in_progress')).toHaveLength(9);
    });

    it('keys are per user and tenant', async () => {
      const key = uniqueKey('req');
      await t.store.claimRequestKey(t.scope, key, 'h1', 3600);
      await t.store.completeRequestKey(t.scope, key, { status: 200, body: 'mine' });
      expect(await t.store.claimRequestKey(t.neighbour, key, 'h9', 3600)).toEqual({ state: 'new' });
      expect(await t.store.claimRequestKey(t.stranger, key, 'h1', 3600)).toEqual({ state: 'new' });
      await t.store.releaseRequestKey(t.neighbour, key);
      expect((await t.store.claimRequestKey(t.scope, key, 'h1', 3600)).state).toBe('done');
    });

    it('completing an unclaimed key is not_found; bad input is refused', async () => {
      const s = t.store;
      await expectError(
        s,
        s.completeRequestKey(t.scope, uniqueKey('req'), { status: 200, body: null }),
        'not_found',
      );
      await expectInvalid(s, s.claimRequestKey(t.scope, '', 'h', 60));
      await expectInvalid(s, s.claimRequestKey(t.scope, 'k', '', 60), 'request_hash');
      await expectInvalid(s, s.claimRequestKey(t.scope, 'k', 'h', 0), 'ttl_seconds');
      const key = uniqueKey('req');
      await s.claimRequestKey(t.scope, key, 'h', 60);
      await expectInvalid(s, s.completeRequestKey(t.scope, key, { status: 42, body: null }), 'status');
      await expectInvalid(s, s.completeRequestKey(t.scope, key, { status: 200.5, body: null }), 'status');
      expect((await s.claimRequestKey(t.scope, key, 'h', 60)).state).toBe('in_progress');
    });
  });
}
