/**
 * The `file_copies` catalog (migration 0300) on real PostgreSQL: the primary
 * copy recorded by the trigger for every file, reset when the file's bytes or
 * place change, removed with the file; the queries the repairer and the read
 * fallback use.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestSchema, serviceUrl, type TestSchema } from '../../../test/support/index.ts';
import { createDatabase, type Database, migrate } from '../../src/db/index.ts';
import {
  copiesOfLocation,
  countUnderReplicated,
  countVerified,
  dropCopy,
  insertPendingCopy,
  listCopies,
  markVerified,
  underReplicatedFiles,
} from '../../src/replication/index.ts';

let schema: TestSchema;
let db: Database;
const SHA = 'a'.repeat(64);
const SHA2 = 'b'.repeat(64);

async function insertFile(fileId: string, storageId: string, sha256 = SHA): Promise<void> {
  await db.query(
    `INSERT INTO files (file_id, organization_id, match_id, kind, filename, size_bytes, sha256, storage_id, object_key)
     VALUES ($1, 'o', 'm', 'camera', 'x.mp4', 10, $2, $3, $1)`,
    [fileId, sha256, storageId],
  );
}

beforeAll(async () => {
  schema = await createTestSchema('file_copies');
  db = createDatabase({ databaseUrl: serviceUrl('DATABASE_URL'), schema: schema.schema });
  await migrate(db);
});

afterAll(async () => {
  await db?.close();
  await schema?.close();
});

describe('file_copies', () => {
  it('records the primary copy of every file as verified, and a second copy goes pending → verified', async () => {
    await insertFile('f-1', 'se-1');
    expect((await listCopies(db, 'f-1')).map((c) => [c.storage_id, c.state])).toEqual([['se-1', 'verified']]);
    expect(await insertPendingCopy(db, { file_id: 'f-1', storage_id: 'se-2', object_key: 'f-1', sha256: SHA })).toBe(
      true,
    );
    // One copier per file and SE; no copy of a file that does not exist.
    expect(await insertPendingCopy(db, { file_id: 'f-1', storage_id: 'se-2', object_key: 'f-1', sha256: SHA })).toBe(
      false,
    );
    expect(await insertPendingCopy(db, { file_id: 'nope', storage_id: 'se-2', object_key: 'x', sha256: SHA })).toBe(
      false,
    );
    expect(await countVerified(db, 'f-1')).toBe(1);
    expect(
      await underReplicatedFiles(db, { required: 2, lostStorageIds: [], pendingStaleMs: 60_000, limit: 10 }),
    ).toEqual([]); // a copy is in progress
    await markVerified(db, 'f-1', 'se-2');
    expect(await countVerified(db, 'f-1')).toBe(2);
    expect(await countUnderReplicated(db, 2)).toBe(0);
    // A lost SE's copies do not count.
    expect(await countUnderReplicated(db, 2, ['se-2'])).toBe(1);
    expect(
      (
        await underReplicatedFiles(db, { required: 2, lostStorageIds: ['se-2'], pendingStaleMs: 60_000, limit: 10 })
      ).map((f) => f.file_id),
    ).toEqual(['f-1']);
  });

  it('reads find every verified copy of a location, the named one first, even after its own row is gone', async () => {
    expect((await copiesOfLocation(db, 'se-2', 'f-1')).map((c) => c.storage_id)).toEqual(['se-2', 'se-1']);
    await dropCopy(db, 'f-1', 'se-1');
    expect((await copiesOfLocation(db, 'se-1', 'f-1')).map((c) => c.storage_id)).toEqual(['se-2']);
  });

  it('new bytes or a new place reset the copies to the new primary; deleting the file removes them', async () => {
    await insertFile('f-2', 'se-1');
    await insertPendingCopy(db, { file_id: 'f-2', storage_id: 'se-3', object_key: 'f-2', sha256: SHA });
    await markVerified(db, 'f-2', 'se-3');
    await db.query(`UPDATE files SET match_id = 'm-2' WHERE file_id = 'f-2'`);
    expect(await countVerified(db, 'f-2')).toBe(2);
    await db.query(`UPDATE files SET storage_id = 'se-2', sha256 = $1 WHERE file_id = 'f-2'`, [SHA2]);
    expect((await listCopies(db, 'f-2')).map((c) => [c.storage_id, c.state, c.sha256])).toEqual([
      ['se-2', 'verified', SHA2],
    ]);
    await db.query(`DELETE FROM files WHERE file_id = 'f-2'`);
    expect(await listCopies(db, 'f-2')).toEqual([]);
  });
});
