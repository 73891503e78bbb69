/**
 * An optimistic write on PostgreSQL: the reads of a core transaction run as single statements (no BEGIN,
 * no row locks), its writes are kept and sent at the end as ONE statement of data-modifying WITH clauses,
 * each with a guard. The statement is atomic by itself: every write lands, or none does. A guard fails
 * (division by zero) when a write changed no row (a compare-and-swap whose row moved, an id already
 * taken) or a session read without a write changed since it was read; anything else the optimistic attempt
 * cannot do (a write whose rows it must read back, a read of a table it has written) throws `OptimisticMiss`.
 * The driver then runs the same work again in an ordinary transaction, which sees why and answers as
 * always: the optimistic attempt never decides an outcome, it only spares round trips when nothing
 * contends (a turn's commit: from BEGIN, 8 statements and COMMIT to its reads and one statement).
 */
import {
  type DeferredWrites,
  OptimisticMiss,
  type SqlExecutor,
  type SqlParam,
  type SqlRow,
} from '../sql/executor.js';

interface Entry {
  readonly kind: 'hold' | 'write';
  readonly sql: string;
  readonly params: readonly SqlParam[];
}

const WRITE_START = /^\s*(INSERT|UPDATE|DELETE)\b/i;
const WITH_START = /^\s*WITH\b/i;
const MODIFIES = /\b(INSERT|UPDATE|DELETE)\b/i;
const RETURNING = /\bRETURNING\b/i;
const READ_TABLES = /\b(?:FROM|JOIN)\s+([a-z_][a-z0-9_]*)/gi;
const WRITE_TABLES = /\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+([a-z_][a-z0-9_]*)/gi;

function tables(sql: string, pattern: RegExp): string[] {
  return [...sql.matchAll(pattern)].map((m) => (m[1] as string).toLowerCase());
}

/** Index just past the parenthesis that closes the one at `open`. */
function closing(sql: string, open: number): number {
  let depth = 0;
  for (let i = open; i < sql.length; i++) {
    if (sql[i] === '(') depth++;
    else if (sql[i] === ')' && --depth === 0) return i + 1;
  }
  throw new OptimisticMiss('unbalanced parentheses in a kept statement');
}

/** `WITH a AS (...), b AS (...) FINAL` -> its clauses by name and FINAL (our own statement texts only). */
export function splitWith(sql: string): { clauses: { name: string; body: string }[]; final: string } {
  if (!WITH_START.test(sql)) return { clauses: [], final: sql.trim() };
  const clauses: { name: string; body: string }[] = [];
  let at = (WITH_START.exec(sql)?.[0] ?? '').length;
  for (;;) {
    const head = /^\s*([a-z_][a-z0-9_]*)\s+AS\s*\(/i.exec(sql.slice(at));
    if (head === null) throw new OptimisticMiss('a WITH clause it cannot read');
    const open = at + head[0].length - 1;
    const end = closing(sql, open);
    clauses.push({ name: head[1] as string, body: sql.slice(open, end) });
    const rest = /^\s*,/.exec(sql.slice(end));
    if (rest === null) return { clauses, final: sql.slice(end).trim() };
    at = end + rest[0].length;
  }
}

/** One statement of every kept entry: WITH clauses renamed per entry, then the sum of their guards. */
export function keptStatement(entries: readonly Entry[]): { sql: string; params: SqlParam[] } {
  const clauses: string[] = [];
  const guards: string[] = [];
  const params: SqlParam[] = [];
  entries.forEach((entry, n) => {
    if (entry.kind === 'hold') {
      clauses.push(`h${n} AS (${entry.sql})`);
      guards.push(`1 / (SELECT count(*) FROM h${n})`);
      params.push(...entry.params);
      return;
    }
    const { clauses: own, final } = splitWith(entry.sql);
    const rename = (text: string) =>
      own.reduce((out, c) => out.replace(new RegExp(`\\b${c.name}\\b`, 'g'), `${c.name}_${n}`), text);
    for (const c of own) clauses.push(`${c.name}_${n} AS ${rename(c.body)}`);
    clauses.push(`w${n} AS (${rename(final)} RETURNING 1)`);
    guards.push(`1 / (SELECT count(*) FROM w${n})`);
    params.push(...entry.params);
  });
  return { sql: `WITH ${clauses.join(', ')} SELECT ${guards.join(' + ')} AS ok`, params };
}

/** The executor of one optimistic attempt over `reads` (one pooled connection, outside a transaction). */
export class OptimisticExecutor implements SqlExecutor, DeferredWrites {
  private readonly entries = new Map<string, Entry>();
  /** Tables a kept write changes: a later read of one would not see the write, so it misses. */
  private readonly written = new Set<string>();
  private unnamed = 0;

  constructor(private readonly reads: SqlExecutor) {}

  private read(sql: string, unwritten: boolean): void {
    if (WRITE_START.test(sql) || RETURNING.test(sql) || (WITH_START.test(sql) && MODIFIES.test(sql)))
      throw new OptimisticMiss('a write that reads its rows back');
    if (!unwritten && tables(sql, READ_TABLES).some((table) => this.written.has(table)))
      throw new OptimisticMiss(`a read of a table it has written: ${sql.slice(0, 90)}`);
  }

  /** The error of a read that failed, if one did (the connection may be lost). */
  failed: unknown;

  private async reading<T>(sql: string, run: () => Promise<T>, unwritten = false): Promise<T> {
    this.read(sql, unwritten);
    try {
      return await run();
    } catch (error) {
      this.failed = error;
      throw error;
    }
  }
  all(sql: string, params?: readonly SqlParam[]): Promise<SqlRow[]> {
    return this.reading(sql, () => this.reads.all(sql, params));
  }
  get(sql: string, params?: readonly SqlParam[]): Promise<SqlRow | undefined> {
    return this.reading(sql, () => this.reads.get(sql, params));
  }
  getRow(sql: string, params: readonly SqlParam[]): Promise<SqlRow | undefined> {
    return this.reading(sql, () => this.reads.get(sql, params), true);
  }
  /** Kept; answers that one row changed (the guard makes it so, or the attempt misses). */
  async run(sql: string, params: readonly SqlParam[] = []): Promise<number> {
    this.write(`#${this.unnamed++}`, sql, params);
    return 1;
  }

  hold(key: string, sql: string, params: readonly SqlParam[], assumed = false): void {
    this.entries.set(key, { kind: 'hold', sql, params });
    if (assumed) this.assumed = true;
  }
  write(key: string, sql: string, params: readonly SqlParam[]): void {
    if (!(WRITE_START.test(sql) || (WITH_START.test(sql) && MODIFIES.test(sql))) || RETURNING.test(sql))
      throw new OptimisticMiss('a statement it cannot keep');
    this.entries.delete(key);
    this.entries.set(key, { kind: 'write', sql, params });
    for (const table of tables(sql, WRITE_TABLES)) this.written.add(table);
  }

  /** A hold stands for a read not made: checked even when nothing is written. */
  private assumed = false;

  /** Sends the kept writes as one statement (nothing when there are none and no hold is assumed). */
  async flush(): Promise<void> {
    if (this.written.size === 0 && !this.assumed) return;
    const { sql, params } = keptStatement([...this.entries.values()]);
    await this.reads.get(sql, params);
  }
}
