/**
 * The expiry harness, small and short, on the durable stores: 50 sessions with a TTL of 2 s, idle, counted
 * after 5 s with the sweeper running every second. Nothing of the run may remain in the store itself, and
 * the report must hold its figures. (The full size, 1000 x 60 s x 120 s, is run by hand: docs/lifecycle.md.)
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runTtlTest, type TtlProgress } from '../../src/harness/ttl/index.js';
import { dropSchema, randomSchema, schemaUrl } from '../store/postgres-env.js';
import { randomPrefix, removePrefix, urlWithPrefix } from '../store/redis-env.js';

const dir = mkdtempSync(join(tmpdir(), 'agentstate-ttl-'));
const schema = randomSchema();
const prefix = randomPrefix();

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await dropSchema(schema);
  await removePrefix(prefix);
});

const stores: [string, string][] = [
  ['sqlite', `sqlite:${join(dir, 'ttl.db')}`],
  ['postgres', schemaUrl(schema)],
  ['redis', urlWithPrefix(prefix)],
];

describe('expiry harness', () => {
  it.concurrent.each(stores)(
    '%s: nothing of the idle sessions remains, and the report says so',
    async (name, url) => {
      const seen: TtlProgress[] = [];
      const reportPath = join(dir, `${name}.json`);
      const report = await runTtlTest({
        storeUrl: url,
        sessions: 50,
        ttlSeconds: 2,
        waitSeconds: 5,
        messagesPerSession: 3,
        sweepIntervalMs: 1000,
        reportPath,
        onProgress: (p) => seen.push(p),
      });
      expect(report.adapter).toBe(name);
      expect(report.residual).toBe(0);
      expect(report.residual_messages).toBe(0);
      expect(report.residual_pct).toBe(0);
      expect(report.all_gone_at_s).not.toBeNull();
      expect(report.swept).toBe(50);
      expect(report.peak_bytes).toBeGreaterThan(report.baseline_bytes);
      // while idle, the sessions were there before their TTL passed
      expect(report.samples[0]?.stored).toBe(50);
      expect(report.goal_storage_met, JSON.stringify(report)).toBe(true);
      expect(seen.some((p) => p.phase === 'create')).toBe(true);
      expect(seen.filter((p) => p.phase === 'idle').length).toBeGreaterThanOrEqual(3);
      expect(seen.at(-1)?.phase).toBe('done');
      const written = JSON.parse(readFileSync(reportPath, 'utf8')) as Record<string, unknown>;
      for (const field of [
        'store',
        'sessions',
        'ttl_s',
        'wait_s',
        'residual',
        'residual_pct',
        'baseline_bytes',
        'peak_bytes',
        'after_bytes',
      ]) {
        expect(written, field).toHaveProperty(field);
      }
      expect(existsSync(join(dir, `${name}.md`))).toBe(true);
      expect(readFileSync(join(dir, `${name}.md`), 'utf8')).toContain('residual sessions | 0 (0.00 %)');
    },
  );
});
