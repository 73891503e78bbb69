/** Every system the checkpoint benchmark knows. Opt-in ones (a server needed) run only when named. */
import type { SystemSpec } from '../system.js';

type Meta = Omit<SystemSpec, 'open'>;

/** A registry entry that imports its module (and its driver) only when the system is opened. */
function lazy(meta: Meta, load: () => Promise<SystemSpec>): SystemSpec {
  return {
    ...meta,
    async open(context) {
      const spec = await load();
      if (spec.name !== meta.name) throw new Error(`bench registry: ${meta.name} loaded ${spec.name}`);
      return spec.open(context);
    },
  };
}

const agentstate = () => import('./agentstate.js');
const langgraph = () => import('./langgraph.js');
const postgres = () => import('./postgres.js');
const redis = () => import('./redis.js');

export const SYSTEMS: readonly SystemSpec[] = [
  lazy(
    { name: 'agentstate-memory', family: 'agentstate', backend: 'memory' },
    async () => (await agentstate()).agentstateMemory,
  ),
  lazy(
    { name: 'langgraph-memory', family: 'langgraph', backend: 'memory' },
    async () => (await langgraph()).langgraphMemory,
  ),
  lazy(
    { name: 'agentstate-sqlite', family: 'agentstate', backend: 'sqlite' },
    async () => (await agentstate()).agentstateSqlite,
  ),
  lazy(
    { name: 'langgraph-sqlite', family: 'langgraph', backend: 'sqlite' },
    async () => (await langgraph()).langgraphSqlite,
  ),
  lazy(
    { name: 'raw-sqlite', family: 'raw', backend: 'sqlite' },
    async () => (await import('./raw-sqlite.js')).rawSqlite,
  ),
  ...[1, 8].flatMap((n) => {
    const suffix = n === 1 ? '' : `-${n}`;
    const meta = { backend: 'postgres', concurrency: n, optIn: true } as const;
    return [
      lazy({ ...meta, name: `agentstate-postgres${suffix}`, family: 'agentstate' }, async () => {
        const m = await postgres();
        return n === 1 ? m.agentstatePg1 : m.agentstatePg8;
      }),
      lazy({ ...meta, name: `langgraph-postgres${suffix}`, family: 'langgraph' }, async () => {
        const m = await postgres();
        return n === 1 ? m.langgraphPg1 : m.langgraphPg8;
      }),
      lazy({ ...meta, name: `raw-pg-${n}`, family: 'raw' }, async () => {
        const m = await postgres();
        return n === 1 ? m.rawPg1 : m.rawPg8;
      }),
    ];
  }),
  lazy(
    { name: 'agentstate-redis', family: 'agentstate', backend: 'redis', optIn: true },
    async () => (await redis()).agentstateRedis,
  ),
  lazy(
    { name: 'raw-redis', family: 'raw', backend: 'redis', optIn: true },
    async () => (await redis()).rawRedis,
  ),
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
