import { PGlite } from '@electric-sql/pglite';
import { type Database, type Queryable, type QueryResult, quoteIdentifier } from '../database.ts';

export interface PgliteDatabaseOptions {
  /** Folder of the database files; in memory when omitted. */
  dataDir?: string;
  /** @defaultValue 'public' */
  schema?: string;
}

/**
 * The PGlite driver of the `Database` port (embedded default): PostgreSQL
 * compiled to WASM, in this process, one connection. Transactions are
 * serialized by PGlite itself.
 */
export class PgliteDatabase implements Database {
  readonly kind = 'pglite' as const;
  readonly schema: string;
  readonly #db: PGlite;
  readonly #ready: Promise<void>;

  constructor(options: PgliteDatabaseOptions = {}) {
    this.schema = options.schema ?? 'public';
    this.#db = new PGlite(options.dataDir);
    this.#ready = this.#db
      .exec(
        `CREATE SCHEMA IF NOT EXISTS ${quoteIdentifier(this.schema)}; SET search_path TO ${quoteIdentifier(this.schema)};`,
      )
      .then(() => {});
  }

  async query<R>(sql: string, params?: unknown[]): Promise<QueryResult<R>> {
    await this.#ready;
    const result = await this.#db.query<R>(sql, params);
    return { rows: result.rows, rowCount: result.affectedRows || result.rows.length };
  }

  async exec(sql: string): Promise<void> {
    await this.#ready;
    await this.#db.exec(sql);
  }

  async transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
    await this.#ready;
    return this.#db.transaction(async (transaction) =>
      work({
        query: async <R>(sql: string, params?: unknown[]) => {
          const result = await transaction.query<R>(sql, params);
          return { rows: result.rows, rowCount: result.affectedRows || result.rows.length };
        },
        exec: async (sql: string) => {
          await transaction.exec(sql);
        },
      }),
    );
  }

  async close(): Promise<void> {
    await this.#db.close();
  }
}
