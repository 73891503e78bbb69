/**
 * A small typed API over the store's memory operations, bound to one user's scope. Every call goes
 * through the store with that scope, so one user's handle can never read another user's items.
 */
import type { z } from 'zod';
import { AgentStateError, invalidRequest } from '../core/errors.js';
import { assertPlainJson, type JsonValue } from '../core/json.js';
import type { MemoryItem } from '../core/model.js';
import type { Page, Scope, StateStore } from '../store/types.js';
import { checkKey, checkNamespace, checkScope, checkTtl } from './namespaces.js';

export interface PutOptions {
  /** Time to live in seconds; null or absent: kept until deleted. */
  readonly ttlSeconds?: number | null;
}

export interface ListOptions {
  readonly prefix?: string;
  /** 1..500; default 50. */
  readonly limit?: number;
  readonly cursor?: string | null;
}

export interface AllOptions {
  readonly prefix?: string;
  /** Stop after this many items. Default 1000. */
  readonly max?: number;
}

/** One namespace, with values checked by an optional zod schema on the way in and out. */
export interface MemoryNamespace<T extends JsonValue> {
  readonly name: string;
  put(key: string, value: T, options?: PutOptions): Promise<MemoryItem>;
  /** The value, or null when absent or expired. */
  get(key: string): Promise<T | null>;
  item(key: string): Promise<MemoryItem | null>;
  delete(key: string): Promise<boolean>;
  list(options?: ListOptions): Promise<Page<MemoryItem>>;
  all(options?: AllOptions): Promise<MemoryItem[]>;
}

/** Every method is async: bad input rejects with `invalid_request`, it never throws synchronously. */
export interface UserMemory {
  readonly scope: Scope;
  put(namespace: string, key: string, value: JsonValue, options?: PutOptions): Promise<MemoryItem>;
  get(namespace: string, key: string): Promise<MemoryItem | null>;
  delete(namespace: string, key: string): Promise<boolean>;
  list(namespace: string, options?: ListOptions): Promise<Page<MemoryItem>>;
  /** Every item of a namespace (optionally under a key prefix), paging through the store, up to `max`. */
  all(namespace: string, options?: AllOptions): Promise<MemoryItem[]>;
  namespace<T extends JsonValue>(name: string, schema?: z.ZodType<T>): MemoryNamespace<T>;
}

export interface UserMemoryOptions {
  /** Allow namespaces starting with `_` (agentstate's own). Default false. */
  readonly allowReserved?: boolean;
}

export function userMemory(store: StateStore, scope: Scope, options: UserMemoryOptions = {}): UserMemory {
  const own = checkScope(scope);
  const allowReserved = options.allowReserved ?? false;
  const ns = (namespace: string) => checkNamespace(namespace, allowReserved);

  const list = async (namespace: string, opts: ListOptions = {}): Promise<Page<MemoryItem>> => {
    const query: { prefix?: string; limit?: number; cursor?: string | null } = {};
    if (opts.prefix !== undefined) query.prefix = checkPrefix(opts.prefix);
    if (opts.limit !== undefined) query.limit = opts.limit;
    if (opts.cursor !== undefined) query.cursor = opts.cursor;
    return store.listMemory(own, ns(namespace), query);
  };

  const all = async (namespace: string, opts: AllOptions = {}): Promise<MemoryItem[]> => {
    const max = opts.max ?? 1000;
    if (!Number.isInteger(max) || max < 1) throw invalidRequest(`memory: max must be a positive integer`);
    const out: MemoryItem[] = [];
    let cursor: string | null = null;
    do {
      const listOpts: ListOptions = { limit: Math.min(500, max - out.length), cursor };
      const page = await list(
        namespace,
        opts.prefix === undefined ? listOpts : { ...listOpts, prefix: opts.prefix },
      );
      out.push(...page.items);
      cursor = page.next_cursor;
    } while (cursor !== null && out.length < max);
    return out.slice(0, max);
  };

  const memory: UserMemory = {
    scope: own,
    async put(namespace, key, value, opts = {}) {
      assertPlainJson(value, 'value');
      return store.putMemory(own, {
        namespace: ns(namespace),
        key: checkKey(key),
        value,
        ttl_seconds: checkTtl(opts.ttlSeconds),
      });
    },
    get: async (namespace, key) => store.getMemory(own, ns(namespace), checkKey(key)),
    delete: async (namespace, key) => store.deleteMemory(own, ns(namespace), checkKey(key)),
    list,
    all,
    namespace<T extends JsonValue>(name: string, schema?: z.ZodType<T>): MemoryNamespace<T> {
      ns(name);
      const check = (value: unknown, where: string, reading: boolean): T => {
        if (schema === undefined) return value as T;
        const parsed = schema.safeParse(value);
        if (parsed.success) return parsed.data;
        const message = `memory ${name}/${where}: ${parsed.error.message}`;
        // A bad value written is the caller's mistake; a stored value that no longer fits is not.
        throw reading ? new AgentStateError('internal', `stored ${message}`) : invalidRequest(message);
      };
      return {
        name,
        put: async (key, value, opts) => memory.put(name, key, check(value, key, false), opts),
        async get(key) {
          const item = await memory.get(name, key);
          return item === null ? null : check(item.value, key, true);
        },
        item: (key) => memory.get(name, key),
        delete: (key) => memory.delete(name, key),
        list: (opts) => list(name, opts),
        all: (opts) => all(name, opts),
      };
    },
  };
  return memory;
}

function checkPrefix(prefix: unknown): string {
  if (typeof prefix !== 'string') throw invalidRequest('memory prefix must be a string', { field: 'prefix' });
  return prefix === '' ? prefix : checkKey(prefix, 'prefix');
}
