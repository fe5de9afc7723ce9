import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PolyvisionError } from '@polyvision/shared';
import { type Database, quoteIdentifier } from './database.ts';

/**
 * Numbered SQL migrations: `core/src/db/migrations/NNNN_name.sql`, applied
 * in order, each once, recorded in `schema_migrations` with its SHA-256.
 * Numbers 0001–0099 belong to the orchestrator, 0100–0199 to ingest, 0200–0299 to the workers,
 * 0300–0399 to replication.
 *
 * Why an own runner and not a library: it runs over the `Database` port, so
 * the same files apply to PostgreSQL (pg) and PGlite; the well-known
 * libraries are tied to one driver (node-pg-migrate: pg) or to another file
 * naming (postgrator: `001.do.name.sql`). It is ~80 lines and tested.
 *
 * Concurrency: all pending migrations apply in ONE transaction that first
 * takes a transaction-scoped advisory lock
 * (`pg_advisory_xact_lock(hashtext('polyvision_migrations:' || schema))`), so
 * replicas starting together apply each migration exactly once; the others
 * wait, then find nothing to do.
 */
export const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url).pathname;

const FILE_NAME = /^(\d{4})_([a-z0-9_]+)\.sql$/;

export interface Migration {
  version: number;
  name: string;
  sql: string;
  sha256: string;
}

/**
 * Reads the migrations of `dir`, sorted by number.
 *
 * @throws PolyvisionError `migration_invalid` for a `.sql` file whose name is
 *   not `NNNN_lower_snake.sql`, or two files with the same number.
 */
export async function readMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
  const migrations: Migration[] = [];
  for (const file of files) {
    const match = FILE_NAME.exec(file);
    if (!match) throw new PolyvisionError('migration_invalid', `migration file ${file} is not named NNNN_name.sql`);
    const sql = await readFile(join(dir, file), 'utf8');
    const version = Number(match[1]);
    if (migrations.some((m) => m.version === version)) {
      throw new PolyvisionError('migration_invalid', `two migrations are numbered ${match[1]}`);
    }
    migrations.push({ version, name: match[2]!, sql, sha256: createHash('sha256').update(sql).digest('hex') });
  }
  return migrations;
}

/**
 * Applies the pending migrations of `dir` to `db`'s schema (created if missing).
 *
 * @returns the versions applied by this call (empty when up to date).
 * @throws PolyvisionError `migration_checksum_mismatch` when an applied
 *   migration's file changed; `db_error` from the database (nothing is applied then).
 */
export async function migrate(db: Database, dir = MIGRATIONS_DIR): Promise<number[]> {
  const migrations = await readMigrations(dir);
  const schema = quoteIdentifier(db.schema);
  return db.transaction(async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`polyvision_migrations:${db.schema}`]);
    await tx.exec(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await tx.exec(
      `CREATE TABLE IF NOT EXISTS ${schema}.schema_migrations (
         version integer PRIMARY KEY,
         name text NOT NULL,
         sha256 text NOT NULL,
         applied_at timestamptz NOT NULL DEFAULT now()
       )`,
    );
    const applied = new Map(
      (
        await tx.query<{ version: number; sha256: string }>(`SELECT version, sha256 FROM ${schema}.schema_migrations`)
      ).rows.map((r) => [r.version, r.sha256]),
    );
    const done: number[] = [];
    for (const migration of migrations) {
      const sha = applied.get(migration.version);
      if (sha !== undefined) {
        if (sha !== migration.sha256) {
          throw new PolyvisionError(
            'migration_checksum_mismatch',
            `migration ${migration.version}_${migration.name} changed after it was applied; add a new migration instead`,
          );
        }
        continue;
      }
      await tx.exec(`SET LOCAL search_path TO ${schema}`);
      await tx.exec(migration.sql);
      await tx.query(`INSERT INTO ${schema}.schema_migrations (version, name, sha256) VALUES ($1, $2, $3)`, [
        migration.version,
        migration.name,
        migration.sha256,
      ]);
      done.push(migration.version);
    }
    return done;
  });
}
