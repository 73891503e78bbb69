/** The session's sliding TTL: renewed by every write, and once it runs out the history is gone at once. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AgentStateSession } from '../../../src/adapters/openai-agents/index.js';
import { ManualClock } from '../../../src/core/clock.js';
import { openStore } from '../../../src/store/open.js';
import { freshScope } from '../stores.js';

const dir = mkdtempSync(join(tmpdir(), 'agentstate-ttl-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.each(['memory:', `sqlite:${join(dir, 'ttl.db')}`])('session TTL over %s', (url) => {
  it('slides with writes and expires when idle, then starts a new, empty session', async () => {
    const clock = new ManualClock();
    const store = await openStore(url, { clock });
    try {
      const scope = freshScope();
      const s = new AgentStateSession({ store, ...scope, ttlSeconds: 60 });
      await s.addItems([{ role: 'user', content: 'one' }]);
      const expired = await s.getSessionId();
      clock.advance(45_000);
      await s.addItems([{ role: 'user', content: 'two' }]); // renews: 60 s from now
      clock.advance(45_000);
      expect(await s.getItems()).toHaveLength(2);
      clock.advance(16_000);
      expect(await s.getItems()).toEqual([]);
      // An expired session is gone: the next write starts a new one, under a new id.
      await s.addItems([{ role: 'user', content: 'three' }]);
      expect(await s.getItems()).toEqual([{ role: 'user', content: 'three' }]);
      const current = await s.getSessionId();
      expect(current).not.toBe(expired);
      expect(await store.getSession(scope, expired)).toBeNull();
      expect((await store.getSession(scope, current))?.ttl_seconds).toBe(60);
    } finally {
      await store.close();
    }
  });
});
