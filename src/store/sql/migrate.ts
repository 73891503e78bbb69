/**
 * Applies the migrations a database lacks, in one transaction that holds the migration lock, and records
 * each in `agentstate_migrations`. Safe when several processes open the same database at once: the second
 * waits for the lock, then finds the versions recorded and applies nothing.
 */
import type { SqlDriver } from './executor.js';
import { MIGRATIONS, type Migration } from './schema.js';

export const MIGRATION_TABLE = 'agentstate_migrations';

export interface MigrationReport {
  /** Versions applied by this call (empty when the schema was current). */
  readonly applied: number[];
  /** The schema version after the call. */
  readonly version: number;
}

export async function migrate(
  driver: SqlDriver,
  migrations: readonly Migration[] = MIGRATIONS,
  now: () => string = () => new Date().toISOString(),
): Promise<MigrationReport> {
  return driver.migrationTransaction(async (tx) => {
    await tx.run(
      `CREATE TABLE IF NOT EXISTS ${MIGRATION_TABLE} (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`,
    );
    const rows = await tx.all(`SELECT version FROM ${MIGRATION_TABLE}`);
    const done = new Set(rows.map((row) => Number(row.version)));
    const known = Math.max(0, ...migrations.map((m) => m.version));
    const newest = Math.max(0, ...done);
    if (newest > known) {
      throw new Error(
        `the database schema is at version ${newest}, newer than this agentstate knows (${known}): upgrade agentstate`,
      );
    }
    const applied: number[] = [];
    for (const migration of migrations) {
      if (done.has(migration.version)) continue;
      for (const statement of migration.statements(driver.dialect)) await tx.run(statement);
      await tx.run(`INSERT INTO ${MIGRATION_TABLE} (version, name, applied_at) VALUES (?, ?, ?)`, [
        migration.version,
        migration.name,
        now(),
      ]);
      applied.push(migration.version);
    }
    const version = Math.max(0, ...done, ...applied);
    return { applied, version };
  });
}
