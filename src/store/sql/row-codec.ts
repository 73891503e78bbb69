/**
 * A table's columns, declared once: the column list of its statements, the parameters that write a record
 * and the record a row reads back, all in the same order.
 */
import type { JsonValue } from '../../core/json.js';
import type { SqlParam, SqlRow } from './executor.js';

/**
 * How a column holds its field: `text` and `int` as they are; `json` as JSON text; a `?` kind keeps the
 * field's null as SQL NULL; `json~` is a field that may be absent, kept as NULL and left out when read.
 */
export type ColumnKind = 'text' | 'text?' | 'int' | 'json' | 'json?' | 'json~';

/** A column that is not one field: it writes what `encode` makes of the record, reads into the record. */
export interface DerivedColumn<R> {
  readonly encode: (record: R) => SqlParam;
  readonly decode: (value: unknown, into: Record<string, unknown>) => void;
}

export interface RowCodec<R> {
  /** `id, tenant_id, ...` */
  readonly columns: string;
  readonly names: readonly string[];
  /** `(?, ?, ...)`: one row's placeholders. */
  readonly placeholders: string;
  decode(row: SqlRow): R;
  /** The parameters of one row, in the order of `columns`. */
  params(record: R): SqlParam[];
  /** `a = ?, b = ?` for the columns named, and their parameters from a record. */
  assign(names: readonly string[]): { readonly sql: string; params(record: R): SqlParam[] };
}

type Field = Readonly<Record<string, unknown>>;
const isNull = (value: unknown) => value === null || value === undefined;
const parse = (value: unknown) => JSON.parse(String(value)) as JsonValue;

const ABSENT = Symbol('absent');
const DECODE: Record<ColumnKind, (value: unknown) => unknown> = {
  text: String,
  'text?': (value) => (isNull(value) ? null : String(value)),
  int: Number,
  json: parse,
  'json?': (value) => (isNull(value) ? null : parse(value)),
  'json~': (value) => (isNull(value) ? ABSENT : parse(value)),
};
const ENCODE: Record<ColumnKind, (value: unknown) => SqlParam> = {
  text: (value) => value as SqlParam,
  'text?': (value) => (value ?? null) as SqlParam,
  int: (value) => value as SqlParam,
  json: (value) => JSON.stringify(value === undefined ? null : value),
  'json?': (value) => (isNull(value) ? null : JSON.stringify(value)),
  'json~': (value) => (value === undefined ? null : JSON.stringify(value)),
};

type Column<R> = {
  readonly name: string;
  readonly encode: (record: R) => SqlParam;
  readonly decode: (value: unknown, into: Record<string, unknown>) => void;
};

/**
 * The codec of the columns `list` names, `name kind` each (`text` when no kind is given), comma-separated,
 * then the `derived` ones.
 */
export function rowCodec<R>(
  list: string,
  derived: Readonly<Record<string, DerivedColumn<R>>> = {},
): RowCodec<R> {
  const fields = list.split(',').map((entry): Column<R> => {
    const [name = '', kind = 'text', ...rest] = entry.trim().split(/\s+/);
    if (!(kind in DECODE) || rest.length > 0) throw new Error(`rowCodec: "${entry.trim()}" is no column`);
    const encode = ENCODE[kind as ColumnKind];
    const decode = DECODE[kind as ColumnKind];
    return {
      name,
      encode: (record) => encode((record as Field)[name]),
      decode: (value, into) => {
        const field = decode(value);
        if (field !== ABSENT) into[name] = field;
      },
    };
  });
  const columns = [...fields, ...Object.entries(derived).map(([name, column]) => ({ name, ...column }))];
  const byName = new Map(columns.map((column) => [column.name, column]));
  const paramsOf = (chosen: readonly Column<R>[]) => (record: R) => chosen.map((c) => c.encode(record));
  return {
    columns: columns.map((c) => c.name).join(', '),
    names: columns.map((c) => c.name),
    placeholders: `(${columns.map(() => '?').join(', ')})`,
    decode(row) {
      const into: Record<string, unknown> = {};
      for (const column of columns) column.decode(row[column.name], into);
      return into as R;
    },
    params: paramsOf(columns),
    assign(names) {
      const chosen = names.map((name) => {
        const column = byName.get(name);
        if (column === undefined) throw new Error(`rowCodec: no column ${name}`);
        return column;
      });
      return { sql: names.map((name) => `${name} = ?`).join(', '), params: paramsOf(chosen) };
    },
  };
}
