/**
 * The tiered store's URL. Two equivalent forms:
 *
 *   redis://[user:pass@]host:port[/db]?durable=<postgres URL, URL-encoded>[&prefix=NAME]
 *   tiered:?redis=<redis URL, URL-encoded>&postgres=<postgres URL, URL-encoded>[&prefix=NAME]
 *
 * `prefix` namespaces the Redis keys (default `agentstate`, or the Redis URL's own `?prefix=`); the
 * PostgreSQL URL keeps its own `?schema=`. Every other parameter of the Redis URL goes to ioredis.
 */
import { invalidRequest } from '../../core/errors.js';

export interface TieredUrl {
  /** The Redis URL without `durable` (it may still hold `prefix`). */
  readonly redis: string;
  /** The PostgreSQL URL, decoded. */
  readonly postgres: string;
}

function fail(message: string): never {
  throw invalidRequest(`[tiered] ${message}`);
}

function parse(url: string): URL {
  try {
    return new URL(url);
  } catch {
    return fail(`not a URL: ${JSON.stringify(url)}`);
  }
}

function checkPostgres(value: string | null, name: string): string {
  if (value === null || value === '') return fail(`the URL needs ${name}=<postgres://... URL-encoded>`);
  if (!/^postgres(ql)?:\/\//.test(value)) {
    fail(`${name} must be a postgres:// or postgresql:// URL (URL-encoded), got ${JSON.stringify(value)}`);
  }
  return value;
}

export function parseTieredUrl(url: string): TieredUrl {
  if (typeof url !== 'string') fail('the URL must be a string');
  const parsed = parse(url);
  if (parsed.protocol === 'tiered:') {
    const redis = parsed.searchParams.get('redis');
    if (redis === null || !/^rediss?:\/\//.test(redis)) {
      fail('tiered: URLs need redis=<redis:// or rediss:// URL, URL-encoded>');
    }
    const postgres = checkPostgres(parsed.searchParams.get('postgres'), 'postgres');
    const inner = parse(redis);
    if (inner.searchParams.has('durable'))
      fail('give the PostgreSQL URL once: postgres= or durable=, not both');
    const prefix = parsed.searchParams.get('prefix');
    if (prefix !== null) inner.searchParams.set('prefix', prefix);
    return { redis: inner.toString(), postgres };
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    fail('the URL must start with redis://, rediss:// or tiered:');
  }
  const postgres = checkPostgres(parsed.searchParams.get('durable'), 'durable');
  parsed.searchParams.delete('durable');
  return { redis: parsed.toString(), postgres };
}
