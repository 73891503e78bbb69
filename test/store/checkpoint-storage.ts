/**
 * Checkpoint storage through the codec, for the SQL stores: storage grows with what changed, history reads
 * back exactly, and prune removes the blobs no kept checkpoint needs. `blobs()` counts the stored blob rows
 * and their bytes for one run.
 */
import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import type { JsonObject } from '../../src/core/json.js';
import type { StateStore } from '../../src/store/types.js';

export type BlobCounter = (tenant_id: string, run_id: string) => Promise<{ rows: number; bytes: number }>;

function state(step: number): JsonObject {
  const messages = Array.from({ length: step + 1 }, (_, i) => ({
    role: 'user',
    content: `message ${i} ${'x'.repeat(200)}`,
  }));
  return { messages, step: { n: step }, fixed: { big: 'y'.repeat(2000) } };
}

export function checkpointStorageTests(open: () => Promise<StateStore>, blobs: BlobCounter): void {
  it('stores 40 steps of a growing history in space that grows with the changes, reads every step back, prunes blobs', async () => {
    const store = await open();
    const scope = { tenant_id: `t_${randomUUID()}`, user_id: 'u' };
    const run_id = `run_${randomUUID()}`;
    for (let step = 0; step < 40; step++)
      await store.putCheckpoint(scope, { run_id, step, channels: state(step) });
    const stored = await blobs(scope.tenant_id, run_id);
    const whole = JSON.stringify(Array.from({ length: 40 }, (_, step) => state(step))).length;
    // Stored whole each time this would be ~whole; with append blobs it is a small fraction of it.
    expect(stored.bytes).toBeLessThan(whole / 5);

    const page = await store.listCheckpoints(scope, run_id, { limit: 40 });
    expect(page.items.map((c) => c.step)).toEqual(Array.from({ length: 40 }, (_, i) => 39 - i));
    for (const checkpoint of page.items) expect(checkpoint.channels).toEqual(state(checkpoint.step));

    expect(await store.pruneCheckpoints(scope, run_id, 2)).toBe(38);
    const kept = await blobs(scope.tenant_id, run_id);
    expect(kept.rows).toBeLessThan(stored.rows);
    expect(kept.bytes).toBeLessThan(stored.bytes / 2);
    const left = await store.listCheckpoints(scope, run_id);
    expect(left.items.map((c) => c.channels)).toEqual([state(39), state(38)]);

    await store.putCheckpoint(scope, { run_id, step: 40, channels: state(40) });
    expect((await store.latestCheckpoint(scope, run_id))?.channels).toEqual(state(40));
    expect(await store.pruneCheckpoints(scope, run_id, 0)).toBe(3);
    expect(await blobs(scope.tenant_id, run_id)).toEqual({ rows: 0, bytes: 0 });
    await store.close();
  });
}
