/**
 * What fork, rewind and branches refuse over HTTP, on the in-process memory store and a SQLite file: bad
 * input is a 400 naming the field and stores nothing; a checkpoint of another session is refused; a session
 * of another user or tenant is a 404 that reveals nothing and is left as it was.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/core/ids.js';
import { branchStores, useBranchServer } from './branches-fixture.js';
import { call, rand } from './harness.js';

const dataDir = mkdtempSync(join(tmpdir(), 'agentstate-branch-refusals-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe.each(branchStores(dataDir))('fork, rewind and branches refused over HTTP ($name)', (kind) => {
  const t = useBranchServer(kind);
  const { scope, alice, sessionWith, snapshot } = t;

  const BAD: { name: string; path: 'fork' | 'rewind'; body?: unknown; raw?: string; names: string }[] = [
    { name: 'fork without a point', path: 'fork', body: {}, names: 'at_seq' },
    { name: 'fork with no body', path: 'fork', names: 'body' },
    {
      name: 'fork at a seq and a checkpoint',
      path: 'fork',
      body: { at_seq: 1, checkpoint_id: 'ckpt_aaaaaaaaaaaaaaaaaaaaaaaaaa' },
      names: 'checkpoint_id',
    },
    { name: 'fork at a negative seq', path: 'fork', body: { at_seq: -1 }, names: 'at_seq' },
    { name: 'fork at a fractional seq', path: 'fork', body: { at_seq: 1.5 }, names: 'at_seq' },
    { name: 'fork at a seq given as text', path: 'fork', body: { at_seq: '2' }, names: 'at_seq' },
    { name: 'fork after the last message', path: 'fork', body: { at_seq: 99 }, names: 'at_seq' },
    {
      name: 'fork at a malformed checkpoint id',
      path: 'fork',
      body: { checkpoint_id: 'nope' },
      names: 'checkpoint_id',
    },
    { name: 'fork with a malformed id', path: 'fork', body: { at_seq: 1, id: 'sess_1' }, names: 'id' },
    { name: 'fork with a TTL of 0', path: 'fork', body: { at_seq: 1, ttl_seconds: 0 }, names: 'ttl_seconds' },
    { name: 'fork with an unknown field', path: 'fork', body: { at_seq: 1, user_id: 'x' }, names: 'user_id' },
    { name: 'fork with malformed JSON', path: 'fork', raw: '{"at_seq": ', names: 'JSON' },
    { name: 'rewind without at_seq', path: 'rewind', body: {}, names: 'at_seq' },
    { name: 'rewind at a negative seq', path: 'rewind', body: { at_seq: -2 }, names: 'at_seq' },
    { name: 'rewind after the last message', path: 'rewind', body: { at_seq: 99 }, names: 'at_seq' },
    { name: 'rewind at the last message', path: 'rewind', body: { at_seq: 3 }, names: 'at_seq' },
    {
      name: 'rewind with a checkpoint',
      path: 'rewind',
      body: { at_seq: 1, checkpoint_id: 'ckpt_aaaaaaaaaaaaaaaaaaaaaaaaaa' },
      names: 'checkpoint_id',
    },
    {
      name: 'rewind with a text version',
      path: 'rewind',
      body: { at_seq: 1, expected_version: '1' },
      names: 'expected_version',
    },
  ];

  it.each(BAD)('400 naming the field, and nothing stored: $name', async (bad) => {
    const session = await sessionWith(3);
    const before = await snapshot(session.id);
    const reply = await call(t.server.url, 'POST', `/v1/sessions/${session.id}/${bad.path}`, {
      ...alice(),
      ...(bad.raw !== undefined ? { raw: bad.raw } : bad.body !== undefined ? { body: bad.body } : {}),
    });
    expect({ status: reply.status, code: reply.body.error.code }).toEqual({
      status: 400,
      code: 'invalid_request',
    });
    expect(reply.body.error.message).toContain(bad.names);
    expect(await snapshot(session.id)).toEqual(before);
  });

  it('a checkpoint of another session is refused, and nothing stored', async () => {
    const session = await sessionWith(2);
    const other = await sessionWith(2);
    const checkpoint = await t.store.putCheckpoint(scope(), {
      run_id: rand('run_'),
      session_id: other.id,
      step: 0,
      channels: {},
    });
    const before = await snapshot(session.id);
    const reply = await call(t.server.url, 'POST', `/v1/sessions/${session.id}/fork`, {
      ...alice(),
      body: { checkpoint_id: checkpoint.id },
    });
    expect(reply.status).toBe(400);
    expect(reply.body.error.message).toContain('checkpoint_id');
    expect(await snapshot(session.id)).toEqual(before);
  });

  it('a session of another user or tenant is a 404 that reveals nothing, and is left as it was', async () => {
    const session = await sessionWith(3);
    const marker = String(session.context.marker);
    const before = await snapshot(session.id);
    const calls = [
      { method: 'POST', path: `/v1/sessions/${session.id}/fork`, body: { at_seq: 1 } },
      { method: 'POST', path: `/v1/sessions/${session.id}/rewind`, body: { at_seq: 1 } },
      { method: 'GET', path: `/v1/sessions/${session.id}/branches` },
    ];
    for (const token of [t.server.tokens.bob, t.server.keyB, t.server.tokens.carol]) {
      for (const c of calls) {
        const reply = await call(t.server.url, c.method, c.path, {
          token,
          ...(c.body ? { body: c.body } : {}),
        });
        expect({ path: c.path, status: reply.status }).toEqual({ path: c.path, status: 404 });
        expect(reply.body.error.code).toBe('not_found');
        expect(reply.text).not.toContain(marker);
      }
    }
    for (const token of [null, t.server.tokens.expired, t.server.tokens.forged]) {
      for (const c of calls) {
        const reply = await call(t.server.url, c.method, c.path, {
          token,
          ...(c.body ? { body: c.body } : {}),
        });
        expect(reply.status).toBe(401);
      }
    }
    expect(await snapshot(session.id)).toEqual(before);
    // Bob's own sessions gained no fork.
    expect(
      (await t.store.listSessions({ tenant_id: t.server.tenantA, user_id: t.server.bob })).items,
    ).toEqual([]);
    // A session id that exists nowhere is the same 404.
    const missing = await call(t.server.url, 'POST', `/v1/sessions/${newId('session')}/fork`, {
      ...alice(),
      body: { at_seq: 0 },
    });
    expect(missing.status).toBe(404);
  });
});
