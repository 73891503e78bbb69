/** Long-term memory: a user's items by namespace and key, with an optional time to live. */
import type { JsonValue } from '../../core/json.js';
import type { MemoryItem } from '../../core/model.js';
import type { Page, PageQuery, Scope } from './common.js';

export interface NewMemory {
  readonly namespace: string;
  readonly key: string;
  readonly value: JsonValue;
  /** Optional time to live in seconds, 1..315 360 000 (10 years); none by default. */
  readonly ttl_seconds?: number | null;
}

/** One item's name: its namespace and key. */
export interface MemoryKey {
  readonly namespace: string;
  readonly key: string;
}

export interface MemoryQuery extends PageQuery {
  readonly prefix?: string;
}

export interface MemoryCalls {
  putMemory(scope: Scope, input: NewMemory): Promise<MemoryItem>;
  getMemory(scope: Scope, namespace: string, key: string): Promise<MemoryItem | null>;
  deleteMemory(scope: Scope, namespace: string, key: string): Promise<boolean>;
  listMemory(scope: Scope, namespace: string, query?: MemoryQuery): Promise<Page<MemoryItem>>;
}
