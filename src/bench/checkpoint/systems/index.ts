/** Every system the checkpoint benchmark knows. Opt-in ones (a server needed) run only when named. */
import type { SystemSpec } from '../system.js';
import { agentstateMemory, agentstateSqlite } from './agentstate.js';
import { langgraphMemory, langgraphSqlite } from './langgraph.js';
import { agentstatePostgres, langgraphPostgres, rawPg1, rawPg8 } from './postgres.js';
import { rawSqlite } from './raw-sqlite.js';
import { agentstateRedis, rawRedis } from './redis.js';

export const SYSTEMS: readonly SystemSpec[] = [
  agentstateMemory,
  langgraphMemory,
  agentstateSqlite,
  langgraphSqlite,
  rawSqlite,
  agentstatePostgres,
  langgraphPostgres,
  rawPg1,
  rawPg8,
  agentstateRedis,
  rawRedis,
];

/** Groups usable in `--systems`, besides single names. */
export const GROUPS: Readonly<Record<string, (s: SystemSpec) => boolean>> = {
  default: (s) => !s.optIn,
  all: () => true,
  memory: (s) => s.backend === 'memory',
  sqlite: (s) => s.backend === 'sqlite',
  postgres: (s) => s.backend === 'postgres',
  redis: (s) => s.backend === 'redis',
};

/** Resolves a comma-separated list of names and groups, keeping the registry's order. */
export function selectSystems(list: string): SystemSpec[] {
  const wanted = new Set<SystemSpec>();
  for (const item of list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const group = GROUPS[item];
    const matches = group ? SYSTEMS.filter(group) : SYSTEMS.filter((s) => s.name === item);
    if (matches.length === 0) {
      const known = [...Object.keys(GROUPS), ...SYSTEMS.map((s) => s.name)].join(', ');
      throw new Error(`unknown system ${JSON.stringify(item)}; known: ${known}`);
    }
    for (const s of matches) wanted.add(s);
  }
  return SYSTEMS.filter((s) => wanted.has(s));
}
