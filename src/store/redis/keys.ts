/**
 * The Redis key layout. Every key of one user carries the hash tag `{<tenant>:<user>}`, so each script
 * touches one cluster slot; the small tenant-level index (id -> user, tenant-wide lists) carries `{<tenant>}`.
 * Tenant and user ids are escaped so that `{`, `}`, `:` or `%` in an id cannot break the layout. Native TTLs
 * are the logical time left (by options.clock) plus a grace of up to 10 s; reads compare expires_at themselves.
 *
 *   P:{t:u}:s:<sid>         hash d (session JSON), r (revision), n (message count), x (expires ms); native TTL
 *   P:{t:u}:m:<sid>         list of message JSON (without owner ids), index = seq - 1; native TTL
 *   P:{t:u}:ss              lex index of the user's sessions (`<created ms>:<sid>`); TTL of the longest one
 *   P:{t:u}:t:<tid>         hash d, r: task          P:{t:u}:te:<tid>   list of its events
 *   P:{t:u}:ts / tss:<sid> / tst:<state>            lex indexes of tasks: all, by session, by state
 *   P:{t:u}:a:<aid>         hash d, r: action        P:{t:u}:ak         hash idempotency key -> action id
 *   P:{t:u}:as / at:<tid> / ast:<status>            lex indexes of actions: all, by task, by status
 *   P:{t:u}:c:<cid>         hash d (checkpoint without channels), m (manifest), run, task (its task id, if any)
 *   P:{t:u}:cr:<run>        zset checkpoint ids by sequence     P:{t:u}:cb:<run>  hash blob hash -> `base|data`
 *   P:{t:u}:cq              hash run -> last checkpoint sequence (a gap is harmless: bumped to refuse a
 *                           concurrent put whenever the latest manifest changes under it)
 *   P:{t:u}:cm              hash run -> manifest of its latest checkpoint (what the next one encodes against)
 *   P:{t:u}:ct:<tid>        set of the ids of the task's checkpoints (deleted with the task)
 *   P:{t:u}:rt / ra / rc    retention age hints, written by the record's own script: task id by updated ms,
 *                           finished (SUCCESS/FAILED) action id by updated ms, checkpoint id by created ms
 *   P:{t:u}:mv:<ns>:<key>   hash d, r: memory item (optional native TTL)   P:{t:u}:mi:<ns>  lex index of keys
 *   P:{t:u}:l:<name>        hash d, r: lease         P:{t:u}:rq:<key>   hash d, r: request idempotency key
 *   P:{t:u}:ev:<sid>:<run>  list of the run's events (JSON without owner ids), index = seq - 1 (run-events.ts)
 *   P:{t:u}:evx:<sid>:<run> hash x: expires ms of the run's newest event; both with the run's native TTL
 *   P:{t}:own               hash id -> user id (sessions, tasks, actions, checkpoints, `run:<run_id>`)
 *   P:{t}:ss / ts / as      lex indexes of the tenant's sessions, tasks, actions
 *   P:{t}:sx                zset session expiry hints (`<created ms>:<sid>` by expires ms) for the sweeper
 *   P:{t}:evh               zset run event expiry hints (`<user>:<sid>:<run>` by expires ms) for the sweeper
 *   P:{t}:rtu / rau / rcu   zset user id by a lower bound of the oldest score in their rt / ra / rc: where
 *                           retention looks (written before the user's script, only ever lowered by
 *                           writers; the sweeper re-scores a user it swept and never removes one, see
 *                           retention.ts)
 *   P:tenants               set of escaped tenant ids (for the sweepers)
 *   P:cursor-key            the key sealing list cursors (hex of 32 random bytes), set once by the first store
 *   P:{stats}:st:<status>   zset `<tenant>:<user>:<sid>` by expires ms: live session counts (stats.ts)
 *   P:{stats}:ast:PENDING / ast:UNKNOWN   zset `<tenant>:<user>:<aid>` by created ms: counts of actions
 *                           PENDING / UNKNOWN (action-stats.ts). Maintained NEXT TO the records (another
 *                           slot, so not in the user's script): set right after each action write commits
 *                           and after retention deletes; a crash in between can leave an entry missing
 *                           (until the action's next write) or stale (dropped by actionStats' check of a
 *                           bounded sample against the user's ast:<status>)
 */

/** The kinds of record retention deletes, each with its own age hints. */
export type AgeKind = 'tasks' | 'actions' | 'checkpoints';

const AGE_KEYS: Record<AgeKind, string> = { tasks: 'rt', actions: 'ra', checkpoints: 'rc' };

/** Escapes an id for use inside a key: `%`, `{`, `}` and `:` become %XX. */
export function escapeKeyPart(value: string): string {
  return value.replace(/[%{}:]/g, (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}

export function unescapeKeyPart(value: string): string {
  return value.replace(/%([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
}

/** A lex index member: the creation time padded to 15 digits, then the id; sorts by (created, id). */
export function indexMember(createdAt: string, id: string): string {
  return `${String(Date.parse(createdAt)).padStart(15, '0')}:${id}`;
}

export function memberId(member: string): string {
  return member.slice(member.indexOf(':') + 1);
}

export class UserKeys {
  readonly base: string;
  constructor(prefix: string, tenant: string, user: string) {
    this.base = `${prefix}:{${escapeKeyPart(tenant)}:${escapeKeyPart(user)}}:`;
  }
  session(id: string): string {
    return `${this.base}s:${id}`;
  }
  messages(sessionId: string): string {
    return `${this.base}m:${sessionId}`;
  }
  sessions(): string {
    return `${this.base}ss`;
  }
  task(id: string): string {
    return `${this.base}t:${id}`;
  }
  taskEvents(id: string): string {
    return `${this.base}te:${id}`;
  }
  tasks(): string {
    return `${this.base}ts`;
  }
  tasksBySession(sessionId: string): string {
    return `${this.base}tss:${sessionId}`;
  }
  tasksByState(state: string): string {
    return `${this.base}tst:${state}`;
  }
  action(id: string): string {
    return `${this.base}a:${id}`;
  }
  actionKeys(): string {
    return `${this.base}ak`;
  }
  actions(): string {
    return `${this.base}as`;
  }
  actionsByTask(taskId: string): string {
    return `${this.base}at:${taskId}`;
  }
  actionsByStatus(status: string): string {
    return `${this.base}ast:${status}`;
  }
  checkpoint(id: string): string {
    return `${this.base}c:${id}`;
  }
  runCheckpoints(runId: string): string {
    return `${this.base}cr:${escapeKeyPart(runId)}`;
  }
  runBlobs(runId: string): string {
    return `${this.base}cb:${escapeKeyPart(runId)}`;
  }
  runSequences(): string {
    return `${this.base}cq`;
  }
  runLatest(): string {
    return `${this.base}cm`;
  }
  taskCheckpoints(taskId: string): string {
    return `${this.base}ct:${taskId}`;
  }
  /** Retention age hints of one kind (`rt`, `ra`, `rc`). */
  ages(kind: AgeKind): string {
    return `${this.base}${AGE_KEYS[kind]}`;
  }
  memory(namespace: string, key: string): string {
    return `${this.base}mv:${escapeKeyPart(namespace)}:${escapeKeyPart(key)}`;
  }
  memoryIndex(namespace: string): string {
    return `${this.base}mi:${escapeKeyPart(namespace)}`;
  }
  lease(name: string): string {
    return `${this.base}l:${escapeKeyPart(name)}`;
  }
  requestKey(key: string): string {
    return `${this.base}rq:${escapeKeyPart(key)}`;
  }
  /** The run's events of one session, as a list (seq = position, from 1). */
  runEvents(sessionId: string, runId: string): string {
    return `${this.base}ev:${escapeKeyPart(sessionId)}:${escapeKeyPart(runId)}`;
  }
  /** The expiry of the run's newest event (hash field x, ms). */
  runEventsExpiry(sessionId: string, runId: string): string {
    return `${this.base}evx:${escapeKeyPart(sessionId)}:${escapeKeyPart(runId)}`;
  }
}

export class TenantKeys {
  readonly base: string;
  constructor(prefix: string, tenant: string) {
    this.base = `${prefix}:{${escapeKeyPart(tenant)}}:`;
  }
  owners(): string {
    return `${this.base}own`;
  }
  sessions(): string {
    return `${this.base}ss`;
  }
  sessionExpiry(): string {
    return `${this.base}sx`;
  }
  tasks(): string {
    return `${this.base}ts`;
  }
  actions(): string {
    return `${this.base}as`;
  }
  /** Run event expiry hints: `<user>:<sid>:<run>` (escaped) by the expiry of the run's newest event. */
  runEventHints(): string {
    return `${this.base}evh`;
  }
  /** Users by (a lower bound of) their oldest retention age hint of one kind. */
  agedUsers(kind: AgeKind): string {
    return `${this.base}${AGE_KEYS[kind]}u`;
  }
}

export function tenantsKey(prefix: string): string {
  return `${prefix}:tenants`;
}

export function cursorKeyKey(prefix: string): string {
  return `${prefix}:cursor-key`;
}
