import type { Pool } from 'pg';
import { ValidationError } from '../errors/index.ts';
import { assertKey, assertTtlMs, type TtlRecord, type TtlStore } from './ttl-store.ts';

/** Anything with pg's `query(text, values)`: a `pg.Pool`, `pg.Client` or pool client. */
export type PgQueryable = Pick<Pool, 'query'>;

/** Options of {@link PostgresTtlStore}. */
export interface PostgresTtlStoreOptions {
  /** Table name (created if missing). @defaultValue 'polyvision_ttl_store' */
  table?: string;
  /** Schema of the table (created if missing when given); unqualified when absent. */
  schema?: string;
}

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

function identifier(name: string, what: string): string {
  if (!IDENTIFIER.test(name)) {
    throw new ValidationError(
      'ttl_store_invalid_argument',
      `${what} must match ${IDENTIFIER} (lower-case SQL identifier), got ${JSON.stringify(name)}`,
    );
  }
  return `"${name}"`;
}

/** PostgreSQL SQLSTATEs a concurrent `CREATE … IF NOT EXISTS` may raise although it lost a harmless race. */
const CREATE_RACE_CODES = new Set(['23505', '42P07', '42P06']);

/**
 * {@link TtlStore} on PostgreSQL through a pg pool or client owned by the
 * caller (the store never ends it).
 *
 * One row per key: `value`, `expires_at`, `term`. Expiry compares
 * `expires_at` with the database's `clock_timestamp()`, so one clock (the
 * server's) decides for every contender. Each operation is one statement:
 * insert is `INSERT … ON CONFLICT DO UPDATE … WHERE <expired or released>`
 * (row-locked and re-checked by PostgreSQL under concurrency), swap and
 * delete are conditional UPDATEs. A delete clears `value` but keeps the row,
 * so `term` (bigint, only ever incremented) survives releases, store
 * instances and restarts: the strongest fencing guarantee of the three drivers.
 */
export class PostgresTtlStore implements TtlStore {
  readonly #db: PgQueryable;
  readonly #table: string;
  readonly #schema: string | undefined;
  #ready: Promise<void> | undefined;

  /** @throws ValidationError `ttl_store_invalid_argument` for a bad table or schema name. */
  constructor(db: PgQueryable, options: PostgresTtlStoreOptions = {}) {
    this.#db = db;
    this.#schema = options.schema === undefined ? undefined : identifier(options.schema, 'schema');
    const table = identifier(options.table ?? 'polyvision_ttl_store', 'table');
    this.#table = this.#schema ? `${this.#schema}.${table}` : table;
  }

  /** Creates the schema and table if missing; called once, lazily, by every operation. */
  ensureTable(): Promise<void> {
    this.#ready ??= this.#create().catch((error: unknown) => {
      this.#ready = undefined;
      throw error;
    });
    return this.#ready;
  }

  async insertIfNotExists(key: string, value: string, ttlMs: number): Promise<number | null> {
    assertKey(key);
    assertKey(value, 'value');
    assertTtlMs(ttlMs);
    await this.ensureTable();
    const result = await this.#db.query<{ term: string }>(
      `INSERT INTO ${this.#table} AS s (key, value, expires_at, term)
       VALUES ($1, $2, clock_timestamp() + make_interval(secs => $3::double precision / 1000), 1)
       ON CONFLICT (key) DO UPDATE
         SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at, term = s.term + 1
         WHERE s.value IS NULL OR s.expires_at <= clock_timestamp()
       RETURNING term`,
      [key, value, ttlMs],
    );
    const row = result.rows[0];
    return row ? Number(row.term) : null;
  }

  async compareAndSwap(key: string, expected: string, next: string, ttlMs: number): Promise<boolean> {
    assertKey(key);
    assertKey(expected, 'expected');
    assertKey(next, 'next');
    assertTtlMs(ttlMs);
    await this.ensureTable();
    const result = await this.#db.query(
      `UPDATE ${this.#table}
         SET value = $3, expires_at = clock_timestamp() + make_interval(secs => $4::double precision / 1000)
       WHERE key = $1 AND value = $2 AND expires_at > clock_timestamp()`,
      [key, expected, next, ttlMs],
    );
    return result.rowCount === 1;
  }

  async compareAndDelete(key: string, expected: string): Promise<boolean> {
    assertKey(key);
    assertKey(expected, 'expected');
    await this.ensureTable();
    const result = await this.#db.query(
      `UPDATE ${this.#table} SET value = NULL, expires_at = NULL
       WHERE key = $1 AND value = $2 AND expires_at > clock_timestamp()`,
      [key, expected],
    );
    return result.rowCount === 1;
  }

  async get(key: string): Promise<TtlRecord | null> {
    assertKey(key);
    await this.ensureTable();
    const result = await this.#db.query<{ value: string; term: string; ttl_ms: string }>(
      `SELECT value, term,
              GREATEST(0, FLOOR(EXTRACT(EPOCH FROM (expires_at - clock_timestamp())) * 1000))::bigint AS ttl_ms
       FROM ${this.#table}
       WHERE key = $1 AND value IS NOT NULL AND expires_at > clock_timestamp()`,
      [key],
    );
    const row = result.rows[0];
    return row ? { value: row.value, ttlMs: Number(row.ttl_ms), term: Number(row.term) } : null;
  }

  async #create(): Promise<void> {
    if (this.#schema) await this.#tolerateRace(`CREATE SCHEMA IF NOT EXISTS ${this.#schema}`);
    await this.#tolerateRace(
      `CREATE TABLE IF NOT EXISTS ${this.#table} (
         key text PRIMARY KEY,
         value text,
         expires_at timestamptz,
         term bigint NOT NULL CHECK (term >= 1)
       )`,
    );
  }

  async #tolerateRace(sql: string): Promise<void> {
    try {
      await this.#db.query(sql);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (typeof code === 'string' && CREATE_RACE_CODES.has(code)) return;
      throw error;
    }
  }
}
