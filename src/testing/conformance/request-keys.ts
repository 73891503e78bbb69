/**
 * Request keys (HTTP Idempotency-Key). Rules: the first claim of a key is `new`; a claim with the same
 * request hash is `in_progress` until completed, then `done` with the stored response; a different hash is
 * `mismatch`; a released key can be claimed anew; a key lives ttl_seconds (counted from the claim, renewed
 * by the completion) and is then claimable as `new`; completing a key that is not claimed is `not_found`;
 * keys are per tenant and user.
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
