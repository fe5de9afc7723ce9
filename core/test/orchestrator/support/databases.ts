import { randomBytes } from 'node:crypto';
import type { Database } from '../../../src/db/database.ts';
import { PgDatabase } from '../../../src/db/drivers/pg-database.ts';
import { PgliteDatabase } from '../../../src/db/drivers/pglite-database.ts';

export const databaseUrl = process.env.DATABASE_URL;

/** A schema name no other test uses. */
export function randomSchema(prefix = 't'): string {
  return `${prefix}_${randomBytes(6).toString('hex')}`;
}

export interface TestDatabaseDriver {
  name: 'pg' | 'pglite';
  skip: boolean;
  /** A database on a fresh schema; `drop()` removes the schema (pg) or closes it (pglite). */
  open(schema?: string): Promise<{ db: Database; drop(): Promise<void> }>;
}

/** Real PostgreSQL (DATABASE_URL, random schema per call) and PGlite: the same SQL on both. */
export const testDatabaseDrivers: TestDatabaseDriver[] = [
  {
    name: 'pg',
    skip: !databaseUrl,
    async open(schema = randomSchema()) {
      const db = new PgDatabase({ connectionString: databaseUrl!, schema, maxConnections: 8 });
      return {
        db,
        async drop() {
          await db.exec(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
          await db.close();
        },
      };
    },
  },
  {
    name: 'pglite',
    skip: false,
    async open(schema = randomSchema()) {
      const db = new PgliteDatabase({ schema });
      return { db, drop: () => db.close() };
    },
  },
];
