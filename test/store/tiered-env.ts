/** Shared by the tiered test files: a fresh Redis prefix and PostgreSQL schema, its URL and cleanup. */
import { dropSchema, randomSchema, schemaUrl } from './postgres-env.js';
import { REDIS_URL, randomPrefix, removePrefix } from './redis-env.js';

export interface TieredEnv {
  readonly prefix: string;
  readonly schema: string;
  /** The tiered URL on the shared test servers. */
  readonly url: string;
  /** The tiered URL with another Redis server (same prefix and schema). */
  urlWith(redisUrl: string): string;
  cleanup(): Promise<void>;
}

export function tieredEnv(): TieredEnv {
  const prefix = randomPrefix();
  const schema = randomSchema();
  const durable = encodeURIComponent(schemaUrl(schema));
  const urlWith = (redisUrl: string) => `${redisUrl}/?prefix=${prefix}&durable=${durable}`;
  return {
    prefix,
    schema,
    url: urlWith(REDIS_URL),
    urlWith,
    cleanup: async () => {
      await removePrefix(prefix);
      await dropSchema(schema);
    },
  };
}
