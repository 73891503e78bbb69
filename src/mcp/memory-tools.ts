/**
 * The memory tools: a user's long-term memory by namespace and key. They go through `userMemory`, so the
 * rules are the library's: namespaces of letters, digits and `_ . : -`, keys of 1-256 characters, values
 * any JSON, and namespaces starting with `_` (agentstate's own, such as compaction summaries) refused.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { assertPlainJson } from '../core/json.js';
import { userMemory } from '../memory/user-memory.js';
import { MAX_PAGE_LIMIT } from '../store/contract/common.js';
import type { StateStore } from '../store/types.js';
import { type McpAccess, userScopeFor } from './access.js';
import { guarded, type McpErrorLog } from './results.js';

/** What the memory tools and the record tools share. */
export interface ToolDeps {
  readonly store: StateStore;
  readonly access: McpAccess;
  readonly log: McpErrorLog;
}

export const UserIdArg = z
  .string()
  .min(1)
  .max(256)
  .describe(
    'The user whose records to use. A user credential may leave it out (it is always that user); a tenant credential names the user here.',
  );
const NamespaceArg = z
  .string()
  .min(1)
  .max(128)
  .describe('Memory namespace, such as "preferences" or "facts" (letters, digits, _ . : -)');
const KeyArg = z.string().min(1).max(256).describe('The item key within the namespace');
export const LimitArg = z.number().int().min(1).max(MAX_PAGE_LIMIT).describe('At most this many (1-500)');
export const CursorArg = z
  .string()
  .min(1)
  .max(4096)
  .describe('The next_cursor of the previous page, to read the next one');

const READ = { readOnlyHint: true, openWorldHint: false } as const;

export function registerMemoryTools(server: McpServer, { store, access, log }: ToolDeps): void {
  const memoryOf = (user_id: string | undefined) => userMemory(store, userScopeFor(access, user_id));

  server.registerTool(
    'memory_get',
    {
      title: 'Get a memory item',
      description:
        "Reads one item of a user's long-term memory by namespace and key. Answers {item}, null when there is none.",
      inputSchema: z.strictObject({ namespace: NamespaceArg, key: KeyArg, user_id: UserIdArg.optional() }),
      annotations: READ,
    },
    guarded('memory_get', log, async ({ namespace, key, user_id }) => ({
      item: await memoryOf(user_id).get(namespace, key),
    })),
  );

  server.registerTool(
    'memory_put',
    {
      title: 'Remember something',
      description:
        "Writes one item of a user's long-term memory (any JSON value), replacing what the key held. Answers {item}.",
      inputSchema: z.strictObject({
        namespace: NamespaceArg,
        key: KeyArg,
        value: z
          .unknown()
          .nonoptional('required (any JSON value)')
          .describe('Any JSON value: a string, number, boolean, null, array or object'),
        ttl_seconds: z
          .number()
          .int()
          .min(1)
          .max(315_360_000)
          .optional()
          .describe('Forget it after this many seconds (default: kept until deleted)'),
        user_id: UserIdArg.optional(),
      }),
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: true,
        openWorldHint: false,
      },
    },
    guarded('memory_put', log, async ({ namespace, key, value, ttl_seconds, user_id }) => {
      const memory = memoryOf(user_id);
      assertPlainJson(value, 'value');
      return { item: await memory.put(namespace, key, value, { ttlSeconds: ttl_seconds ?? null }) };
    }),
  );

  server.registerTool(
    'memory_search',
    {
      title: 'Search memory',
      description:
        "Lists the items of one namespace of a user's memory, in key order, optionally only keys starting with a prefix. Answers {items, next_cursor}.",
      inputSchema: z.strictObject({
        namespace: NamespaceArg,
        prefix: z.string().max(256).optional().describe('Only keys starting with this'),
        limit: LimitArg.optional(),
        cursor: CursorArg.optional(),
        user_id: UserIdArg.optional(),
      }),
      annotations: READ,
    },
    guarded('memory_search', log, async ({ namespace, prefix, limit, cursor, user_id }) => {
      const page = await memoryOf(user_id).list(namespace, {
        ...(prefix === undefined ? {} : { prefix }),
        ...(limit === undefined ? {} : { limit }),
        ...(cursor === undefined ? {} : { cursor }),
      });
      return { items: page.items, next_cursor: page.next_cursor };
    }),
  );

  server.registerTool(
    'memory_delete',
    {
      title: 'Forget a memory item',
      description:
        "Deletes one item of a user's long-term memory. Answers {deleted}: false when there was none.",
      inputSchema: z.strictObject({ namespace: NamespaceArg, key: KeyArg, user_id: UserIdArg.optional() }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    guarded('memory_delete', log, async ({ namespace, key, user_id }) => ({
      deleted: await memoryOf(user_id).delete(namespace, key),
    })),
  );
}
