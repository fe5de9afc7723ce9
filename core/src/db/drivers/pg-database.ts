import { PolyvisionError } from '@polyvision/shared';
import pg from 'pg';
import { type Database, type Queryable, type QueryResult, quoteIdentifier } from '../database.ts';

export interface PgDatabaseOptions {
  /** `postgres://user:pass@host:port/db` (DATABASE_URL). */
  connectionString: string;
  /** @defaultValue 'public' */
  schema?: string;
  /** Pool size. @defaultValue 10 */
  maxConnections?: number;
  /** Per-statement timeout. @defaultValue 30_000 */
  statementTimeoutMs?: number;
  /** Connect timeout. @defaultValue 5_000 */
  connectionTimeoutMs?: number;
}

/** Errors of node-postgres that mean "try again" (connection lost, server restarting, serialization). */
const RETRIABLE_SQLSTATES = new Set(['40001', '40P01', '57P01', '57P02', '57P03', '08000', '08003', '08006', '53300']);

/** Wraps a pg error as a PolyvisionError `db_error`, retriable for connection loss and the listed SQLSTATEs. */
export function wrapPgError(error: unknown): PolyvisionError {
  if (error instanceof PolyvisionError) return error;
  const code = (error as { code?: string }).code;
  const retriable =
    code === undefined ||
    RETRIABLE_SQLSTATES.has(code) ||
    ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT'].includes(code);
  return new PolyvisionError('db_error', (error as Error).message ?? String(error), {
    retriable,
    cause: error,
    details: code ? { sqlstate: code } : {},
  });
}

/** A pg result, or the array of results of a multi-statement script (the last one counts). */
function toResult<R>(result: pg.QueryResult | pg.QueryResult[]): QueryResult<R> {
  const last = Array.isArray(result) ? result[result.length - 1] : result;
  if (!last) return { rows: [], rowCount: 0 };
  return { rows: last.rows as R[], rowCount: last.rowCount ?? last.rows.length };
}

/** The pg (node-postgres) driver of the `Database` port. */
export class PgDatabase implements Database {
  readonly kind = 'pg' as const;
  readonly schema: string;
  readonly #pool: pg.Pool;

  constructor(options: PgDatabaseOptions) {
    this.schema = options.schema ?? 'public';
    this.#pool = new pg.Pool({
      connectionString: options.connectionString,
      max: options.maxConnections ?? 10,
      connectionTimeoutMillis: options.connectionTimeoutMs ?? 5_000,
      statement_timeout: options.statementTimeoutMs ?? 30_000,
      options: `-c search_path=${quoteIdentifier(this.schema)}`,
    });
    // An idle client that loses its server emits 'error' on the pool; the next query reconnects.
    this.#pool.on('error', () => {});
  }

  async query<R>(sql: string, params?: unknown[]): Promise<QueryResult<R>> {
    try {
      return toResult<R>(await this.#pool.query(sql, params as unknown[]));
    } catch (error) {
      throw wrapPgError(error);
    }
  }

  async exec(sql: string): Promise<void> {
    await this.query(sql);
  }

  async transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (error) {
      throw wrapPgError(error);
    }
    // A connection lost while checked out emits 'error' on the client (not on the
    // pool); without a listener Node would crash the process. The failing query rejects anyway.
    let lost = false;
    const onError = () => {
      lost = true;
    };
    client.on('error', onError);
    const tx: Queryable = {
      query: async <R>(sql: string, params?: unknown[]) => {
        try {
          return toResult<R>(await client.query(sql, params as unknown[]));
        } catch (error) {
          throw wrapPgError(error);
        }
      },
      exec: async (sql: string) => {
        await tx.query(sql);
      },
    };
    let broken = false;
    try {
      await tx.query('BEGIN');
      const result = await work(tx);
      await tx.query('COMMIT');
      return result;
    } catch (error) {
      try {
        await client.query('ROLLBACK');
      } catch {
        broken = true;
      }
      throw wrapPgError(error);
    } finally {
      client.off('error', onError);
      client.release(broken || lost);
    }
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }
}
