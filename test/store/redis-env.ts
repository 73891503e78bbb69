/** Shared by the Redis test files: the server URL, a random key prefix per file, and removing its keys. */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';

export const REDIS_URL = process.env.AGENTSTATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export function randomPrefix(): string {
  return `astest_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
}

export function urlWithPrefix(prefix: string): string {
  const url = new URL(REDIS_URL);
  url.searchParams.set('prefix', prefix);
  return url.toString();
}

/** Every key under `prefix:` (SCAN, never KEYS). */
export async function keysOf(redis: Redis, prefix: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    found.push(...keys);
  } while (cursor !== '0');
  return found;
}

export async function removePrefix(prefix: string): Promise<void> {
  const redis = new Redis(REDIS_URL);
  try {
    const keys = await keysOf(redis, prefix);
    for (let i = 0; i < keys.length; i += 500) await redis.unlink(...keys.slice(i, i + 500));
  } finally {
    redis.disconnect();
  }
}
