/**
 * The schema as a versioned list of migrations, shared by SQLite and PostgreSQL. JSON values are kept as
 * JSON text (PostgreSQL's jsonb refuses the \u0000 character inside strings; text keeps every plain-JSON
 * value byte for byte; audit queries can still cast a column with `::jsonb`). Timestamps are ISO-8601 UTC
 * text, which sorts and compares in time order. Every list query has an index leading with its scope.
 */
import type { SqlDialect } from './executor.js';

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly statements: (dialect: SqlDialect) => string[];
}

const v1 = (d: SqlDialect): string[] => [
  `CREATE TABLE sessions (
    ord ${d.serialKey}, id TEXT NOT NULL UNIQUE, tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, agent TEXT, status TEXT NOT NULL,
    context TEXT NOT NULL, version INTEGER NOT NULL, ttl_seconds INTEGER NOT NULL, created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL, last_activity_at TEXT NOT NULL, expires_at TEXT NOT NULL, ended_at TEXT,
    message_count INTEGER NOT NULL DEFAULT 0)`,
  'CREATE INDEX sessions_by_user ON sessions (tenant_id, user_id, ord)',
  'CREATE INDEX sessions_by_tenant ON sessions (tenant_id, ord)',
  'CREATE INDEX sessions_by_expiry ON sessions (expires_at)',
  `CREATE TABLE messages (
    tenant_id TEXT NOT NULL, session_id TEXT NOT NULL, seq INTEGER NOT NULL, id TEXT NOT NULL,
    user_id TEXT NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL, name TEXT, tool_calls TEXT,
    tool_call_id TEXT, metadata TEXT NOT NULL, created_at TEXT NOT NULL,
    PRIMARY KEY (tenant_id, session_id, seq))`,
  `CREATE TABLE tasks (
    ord ${d.serialKey}, id TEXT NOT NULL UNIQUE, tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, session_id TEXT, type TEXT NOT NULL,
    state TEXT NOT NULL, slots TEXT NOT NULL, status_line TEXT NOT NULL, data TEXT NOT NULL,
    version INTEGER NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, closed_at TEXT)`,
  'CREATE INDEX tasks_by_user ON tasks (tenant_id, user_id, ord)',
  'CREATE INDEX tasks_by_tenant ON tasks (tenant_id, ord)',
  'CREATE INDEX tasks_by_session ON tasks (tenant_id, session_id, ord)',
  `CREATE TABLE task_events (
    id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, task_id TEXT NOT NULL,
    from_state TEXT, to_state TEXT NOT NULL, cause TEXT NOT NULL, task_version INTEGER NOT NULL,
    at TEXT NOT NULL)`,
  'CREATE INDEX task_events_by_task ON task_events (tenant_id, task_id, task_version)',
  `CREATE TABLE actions (
    ord ${d.serialKey}, id TEXT NOT NULL UNIQUE, tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, task_id TEXT NOT NULL,
    session_id TEXT, type TEXT NOT NULL, tool TEXT, params TEXT NOT NULL, idempotency_key TEXT NOT NULL,
    status TEXT NOT NULL, result TEXT, error TEXT, attempts INTEGER NOT NULL, note TEXT,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL, completed_at TEXT)`,
  'CREATE UNIQUE INDEX actions_by_key ON actions (tenant_id, user_id, idempotency_key)',
  'CREATE INDEX actions_by_user ON actions (tenant_id, user_id, ord)',
  'CREATE INDEX actions_by_tenant ON actions (tenant_id, ord)',
  'CREATE INDEX actions_by_task ON actions (tenant_id, task_id, ord)',
  `CREATE TABLE checkpoints (
    ord ${d.serialKey}, id TEXT NOT NULL UNIQUE, tenant_id TEXT NOT NULL, user_id TEXT NOT NULL,
    run_id TEXT NOT NULL, session_id TEXT, task_id TEXT, step INTEGER NOT NULL, parent_id TEXT,
    label TEXT NOT NULL, manifest TEXT NOT NULL, metadata TEXT NOT NULL, created_at TEXT NOT NULL)`,
  'CREATE INDEX checkpoints_by_run ON checkpoints (tenant_id, user_id, run_id, ord)',
  'CREATE INDEX checkpoints_by_tenant_run ON checkpoints (tenant_id, run_id, ord)',
  `CREATE TABLE checkpoint_blobs (
    tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, run_id TEXT NOT NULL, hash TEXT NOT NULL, base TEXT,
    data TEXT NOT NULL, PRIMARY KEY (tenant_id, user_id, run_id, hash))`,
  `CREATE TABLE memory (
    tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL,
    value TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, expires_at TEXT,
    PRIMARY KEY (tenant_id, user_id, namespace, key))`,
  'CREATE INDEX memory_by_expiry ON memory (expires_at)',
  `CREATE TABLE leases (
    tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, name TEXT NOT NULL, owner TEXT NOT NULL,
    expires_at TEXT NOT NULL, PRIMARY KEY (tenant_id, user_id, name))`,
  'CREATE INDEX leases_by_expiry ON leases (expires_at)',
  `CREATE TABLE request_keys (
    tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, key TEXT NOT NULL, request_hash TEXT NOT NULL,
    state TEXT NOT NULL, response TEXT, ttl_seconds INTEGER NOT NULL, expires_at TEXT NOT NULL,
    PRIMARY KEY (tenant_id, user_id, key))`,
  'CREATE INDEX request_keys_by_expiry ON request_keys (expires_at)',
];

/** Indexes of the lifecycle calls: sessionStats counts by (status, expiry); retention finds old records. */
const v2 = (): string[] => [
  'CREATE INDEX sessions_by_status_expiry ON sessions (status, expires_at)',
  'CREATE INDEX tasks_by_updated ON tasks (updated_at)',
  'CREATE INDEX actions_by_status_updated ON actions (status, updated_at)',
  'CREATE INDEX checkpoints_by_created ON checkpoints (created_at)',
  'CREATE INDEX checkpoints_by_task ON checkpoints (tenant_id, task_id)',
];

/**
 * The key that seals list cursors (shared/sealed-cursor.ts): random, made by the database once, so every
 * process on the database opens the cursors of every other.
 */
const v3 = (d: SqlDialect): string[] => [
  'CREATE TABLE agentstate_keys (name TEXT PRIMARY KEY, value TEXT NOT NULL)',
  d.name === 'postgres'
    ? "INSERT INTO agentstate_keys (name, value) VALUES ('cursor', encode(sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text || clock_timestamp()::text, 'UTF8')), 'hex'))"
    : "INSERT INTO agentstate_keys (name, value) VALUES ('cursor', lower(hex(randomblob(32))))",
];

/**
 * The open states (OPEN_TASK_STATES) as the SQL term of the open-task indexes below. A query uses those
 * indexes only when it holds this very term (SQLite matches it as written; PostgreSQL proves it from
 * constants, never from parameters), so every open-task query writes it from here. Written out, not
 * derived: the index of a released migration never changes.
 */
export const OPEN_TASK_STATES_SQL = "state IN ('INIT', 'COLLECTING', 'CONFIRMING', 'EXECUTING', 'FAILED')";

/**
 * The open tasks of a user and of a session, indexed apart: a turn reads them, and without these it read
 * past every finished task of the user (or the session) to find them, a read that grew with the user's
 * history (5,000 done tasks: the head 0.06 -> 0.9 ms on SQLite, 0.9 -> 2.3 ms on PostgreSQL).
 */
const v4 = (): string[] => [
  `CREATE INDEX tasks_open_by_user ON tasks (tenant_id, user_id, ord) WHERE ${OPEN_TASK_STATES_SQL}`,
  `CREATE INDEX tasks_open_by_session ON tasks (tenant_id, session_id, ord) WHERE ${OPEN_TASK_STATES_SQL}`,
];

/**
 * Run events (core/events.ts): a run's log, numbered per session and run. `expires_at` is the row's own;
 * a sweep removes a run's rows once its newest one expired (run_events_by_expiry finds the candidates).
 */
const v5 = (): string[] => [
  `CREATE TABLE run_events (
    tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, session_id TEXT NOT NULL, run_id TEXT NOT NULL,
    seq INTEGER NOT NULL, type TEXT NOT NULL, data TEXT NOT NULL, created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL, PRIMARY KEY (tenant_id, session_id, run_id, seq))`,
  'CREATE INDEX run_events_by_expiry ON run_events (expires_at)',
];

/**
 * Session forks (core/branches.ts): `lineage` holds a session's fork fields as JSON; `kept_until`, when
 * set, keeps an expired session's row and messages for the forks that read them (the sweep waits for it);
 * `task_events.snapshot`: a task's slots, data and status line at each version (a fork copies them).
 */
const v6 = (): string[] => [
  'ALTER TABLE sessions ADD COLUMN lineage TEXT',
  'ALTER TABLE sessions ADD COLUMN kept_until TEXT',
  'ALTER TABLE task_events ADD COLUMN snapshot TEXT',
];

/** Append only: a released migration is never edited; a change is a new version. */
export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: 'initial schema', statements: v1 },
  { version: 2, name: 'lifecycle indexes', statements: v2 },
  { version: 3, name: 'cursor key', statements: v3 },
  { version: 4, name: 'open task indexes', statements: v4 },
  { version: 5, name: 'run events', statements: v5 },
  { version: 6, name: 'session forks', statements: v6 },
];
