/**
 * The `Database` port: what the orchestrator, the worker claims and ingest
 * need from PostgreSQL. Two drivers run the same SQL: `PgDatabase` (a pg
 * Pool, production and tests) and `PgliteDatabase` (PostgreSQL compiled to
 * WASM, the embedded default).
 */
export interface QueryResult<R> {
  rows: R[];
  /** Rows inserted, updated, deleted or returned. */
  rowCount: number;
}

/** Something SQL can run on: the database itself or an open transaction. */
export interface Queryable {
  /** One statement with `$1…` parameters. */
  query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<QueryResult<R>>;
  /** A script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

export interface Database extends Queryable {
  /** `pg` or `pglite`, for logs. */
  readonly kind: 'pg' | 'pglite';
  /** The schema every unqualified name resolves to (`search_path`). */
  readonly schema: string;
  /**
   * Runs `work` in one transaction (READ COMMITTED) on one connection:
   * COMMIT when it resolves, ROLLBACK when it throws (the error propagates).
   */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** Quotes an SQL identifier (schema names come from config and tests). */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
