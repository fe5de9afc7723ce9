import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PgDatabase } from '../../src/db/drivers/pg-database.ts';
import { migrate, readMigrations } from '../../src/db/migrate.ts';
import { databaseUrl, randomSchema, testDatabaseDrivers } from '../orchestrator/support/databases.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function tempMigrations(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'migrations-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  for (const [name, sql] of Object.entries(files)) await writeFile(join(dir, name), sql);
  return dir;
}

describe('readMigrations', () => {
  it('reads the shipped migrations in order, all in the orchestrator, ingest, workers or replication range', async () => {
    const migrations = await readMigrations();
    expect(migrations.length).toBeGreaterThanOrEqual(5);
    const versions = migrations.map((m) => m.version);
    expect(versions).toEqual([...versions].sort((a, b) => a - b));
    expect(versions.every((v) => v >= 1 && v <= 399)).toBe(true);
  });

  it('refuses a badly named file and a duplicated number', async () => {
    await expect(readMigrations(await tempMigrations({ '1_x.sql': 'select 1' }))).rejects.toMatchObject({
      code: 'migration_invalid',
    });
    await expect(
      readMigrations(await tempMigrations({ '0001_a.sql': 'select 1', '0001_b.sql': 'select 1' })),
    ).rejects.toMatchObject({ code: 'migration_invalid' });
  });
});

for (const driver of testDatabaseDrivers) {
  describe.skipIf(driver.skip)(`migrate on ${driver.name}`, () => {
    it('applies every migration once and creates the orchestrator tables', async () => {
      const { db, drop } = await driver.open();
      cleanups.push(drop);
      const applied = await migrate(db);
      expect(applied.length).toBeGreaterThanOrEqual(5);
      expect(await migrate(db)).toEqual([]);
      const tables = await db.query<{ table_name: string }>(
        `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1`,
        [db.schema],
      );
      expect(tables.rows.map((r) => r.table_name)).toEqual(
        expect.arrayContaining([
          'files',
          'uploads',
          'jobs',
          'job_stages',
          'outbox',
          'processed_messages',
          'partition_owners',
          'stage_claims',
          'schema_migrations',
        ]),
      );
    });

    it('refuses an applied migration whose file changed, and rolls back a failing one', async () => {
      const { db, drop } = await driver.open();
      cleanups.push(drop);
      const dir = await tempMigrations({ '0001_a.sql': 'CREATE TABLE a (x int);' });
      expect(await migrate(db, dir)).toEqual([1]);
      await writeFile(join(dir, '0001_a.sql'), 'CREATE TABLE a (x int, y int);');
      await expect(migrate(db, dir)).rejects.toMatchObject({ code: 'migration_checksum_mismatch' });
      const broken = await tempMigrations({
        '0001_a.sql': 'CREATE TABLE a (x int);',
        '0002_b.sql': 'CREATE TABLE b (x int);',
        '0003_c.sql': 'CREATE TABLE c (x nonsense_type);',
      });
      await writeFile(join(dir, '0001_a.sql'), 'CREATE TABLE a (x int);');
      await expect(migrate(db, broken)).rejects.toThrow();
      const b = await db.query(`SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'b'`, [
        db.schema,
      ]);
      expect(b.rowCount).toBe(0);
    });
  });
}

describe.skipIf(!databaseUrl)('migrate concurrency on PostgreSQL', () => {
  it('five replicas migrating at once apply each migration exactly once (advisory lock)', async () => {
    const schema = randomSchema();
    const dbs = Array.from(
      { length: 5 },
      () => new PgDatabase({ connectionString: databaseUrl!, schema, maxConnections: 2 }),
    );
    cleanups.push(async () => {
      await dbs[0]!.exec(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await Promise.all(dbs.map((db) => db.close()));
    });
    const results = await Promise.all(dbs.map((db) => migrate(db)));
    const all = results.flat().sort((a, b) => a - b);
    const shipped = (await readMigrations()).map((m) => m.version);
    expect(all).toEqual(shipped);
    const rows = await dbs[0]!.query<{ n: string }>(`SELECT count(*) AS n FROM schema_migrations`);
    expect(Number(rows.rows[0]!.n)).toBe(shipped.length);
  });
});
