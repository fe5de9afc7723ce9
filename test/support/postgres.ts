import pg from 'pg';
import { serviceUrl } from './service-env.ts';
import { uniqueIdentifier } from './unique-name.ts';

/** A throwaway PostgreSQL schema in DATABASE_URL's database. */
export interface TestSchema {
  /** The schema's name (unique, a valid unquoted identifier). */
  schema: string;
  /** A pool whose connections have `search_path` set to the schema. */
  pool: pg.Pool;
  /** DATABASE_URL plus `options=-c search_path=<schema>`, for code under test that takes a URL. */
  url: string;
  /** Closes the pool, then `DROP SCHEMA … CASCADE`. */
  close(): Promise<void>;
}

/** A URL with `-c search_path=<schema>` in libpq's `options` parameter (read by node-postgres too). */
function withSearchPath(url: string, schema: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('options', `-c search_path=${schema}`);
  return parsed.toString();
}

async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * Creates a schema of its own for a test file in the real PostgreSQL at
 * DATABASE_URL. Cheaper than a database; use {@link createTestDatabase} when
 * the code under test creates schemas or extensions itself.
 *
 * @param name - readable start of the schema name. @defaultValue 't'
 * @param poolMax - pool size. @defaultValue 5
 */
export async function createTestSchema(name = 't', poolMax = 5): Promise<TestSchema> {
  const base = serviceUrl('DATABASE_URL');
  const schema = uniqueIdentifier(name);
  await adminQuery(base, `CREATE SCHEMA ${schema}`);
  const url = withSearchPath(base, schema);
  const pool = new pg.Pool({ connectionString: url, max: poolMax });
  pool.on('error', () => {}); // an idle client dropped by the server; the next query reports it
  return {
    schema,
    pool,
    url,
    async close() {
      await pool.end();
      await adminQuery(base, `DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    },
  };
}

/** A throwaway PostgreSQL database on DATABASE_URL's server. */
export interface TestDatabase {
  database: string;
  /** DATABASE_URL with the database replaced. */
  url: string;
  /** `DROP DATABASE … WITH (FORCE)` (also ends connections someone left open). */
  close(): Promise<void>;
}

/**
 * Creates a database of its own (from `template0`) on the PostgreSQL server at DATABASE_URL.
 *
 * @param name - readable start of the database name. @defaultValue 'db'
 */
export async function createTestDatabase(name = 'db'): Promise<TestDatabase> {
  const base = serviceUrl('DATABASE_URL');
  const database = uniqueIdentifier(name);
  await adminQuery(base, `CREATE DATABASE ${database} TEMPLATE template0`);
  const parsed = new URL(base);
  parsed.pathname = `/${database}`;
  return {
    database,
    url: parsed.toString(),
    close: () => adminQuery(base, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`),
  };
}
