import type { Queryable } from '../db/index.ts';

/** One row of `file_copies` (migration 0300). */
export interface FileCopy {
  file_id: string;
  storage_id: string;
  object_key: string;
  state: 'pending' | 'verified';
  sha256: string;
  /** ISO time of the last verification, null while pending. */
  verified_at: string | null;
  /** ISO time the row was made. */
  created_at: string;
}

/** A catalogued file, as replication needs it. */
export interface CatalogFile {
  file_id: string;
  size_bytes: number;
  sha256: string;
}

function decode(row: Record<string, unknown>): FileCopy {
  const time = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string).toISOString());
  return {
    file_id: String(row.file_id),
    storage_id: String(row.storage_id),
    object_key: String(row.object_key),
    state: row.state === 'verified' ? 'verified' : 'pending',
    sha256: String(row.sha256),
    verified_at: time(row.verified_at),
    created_at: time(row.created_at) ?? new Date(0).toISOString(),
  };
}

/** Every copy of a file, verified first, then oldest first. */
export async function listCopies(db: Queryable, fileId: string): Promise<FileCopy[]> {
  const { rows } = await db.query(
    `SELECT * FROM file_copies WHERE file_id = $1 ORDER BY (state = 'verified') DESC, created_at, storage_id`,
    [fileId],
  );
  return rows.map(decode);
}

/**
 * The verified copies of the file whose copy `(storageId, objectKey)` a
 * stage input names (an ArtifactRef), that copy first: where a read may fall back to.
 */
export async function copiesOfLocation(db: Queryable, storageId: string, objectKey: string): Promise<FileCopy[]> {
  const { rows } = await db.query(
    `SELECT c.* FROM file_copies c
     WHERE c.state = 'verified'
       AND c.file_id IN (SELECT file_id FROM file_copies WHERE storage_id = $1 AND object_key = $2
                         UNION SELECT file_id FROM files WHERE storage_id = $1 AND object_key = $2)
     ORDER BY (c.storage_id = $1) DESC, c.verified_at DESC`,
    [storageId, objectKey],
  );
  return rows.map(decode);
}

/** The catalog row of a file (size and SHA-256), or null. */
export async function getCatalogFile(db: Queryable, fileId: string): Promise<CatalogFile | null> {
  const { rows } = await db.query<{ file_id: string; size_bytes: string | number; sha256: string }>(
    `SELECT file_id, size_bytes, sha256 FROM files WHERE file_id = $1`,
    [fileId],
  );
  const row = rows[0];
  return row ? { file_id: row.file_id, size_bytes: Number(row.size_bytes), sha256: row.sha256 } : null;
}

/**
 * Claims `(fileId, storageId)` for a new copy (`pending`).
 * @returns false when the file already has a row on that SE (or the file is gone).
 */
export async function insertPendingCopy(db: Queryable, copy: Omit<FileCopy, 'state' | 'verified_at' | 'created_at'>) {
  const result = await db.query(
    `INSERT INTO file_copies (file_id, storage_id, object_key, state, sha256)
     SELECT $1, $2, $3, 'pending', $4 WHERE EXISTS (SELECT 1 FROM files WHERE file_id = $1)
     ON CONFLICT (file_id, storage_id) DO NOTHING`,
    [copy.file_id, copy.storage_id, copy.object_key, copy.sha256],
  );
  return result.rowCount === 1;
}

/** Marks a copy verified now (its SE checked the SHA-256). */
export async function markVerified(db: Queryable, fileId: string, storageId: string): Promise<void> {
  await db.query(
    `UPDATE file_copies SET state = 'verified', verified_at = now() WHERE file_id = $1 AND storage_id = $2`,
    [fileId, storageId],
  );
}

/** Removes a copy row (a failed copy, or a copy an audit found missing or corrupt). */
export async function dropCopy(db: Queryable, fileId: string, storageId: string): Promise<void> {
  await db.query(`DELETE FROM file_copies WHERE file_id = $1 AND storage_id = $2`, [fileId, storageId]);
}

/**
 * Files with fewer than `required` verified copies on SEs that are not lost,
 * and no copy in progress (a `pending` row younger than `pendingStaleMs`),
 * oldest first, at most `limit`.
 */
export async function underReplicatedFiles(
  db: Queryable,
  options: { required: number; lostStorageIds: readonly string[]; pendingStaleMs: number; limit: number },
): Promise<CatalogFile[]> {
  const { rows } = await db.query<{ file_id: string; size_bytes: string | number; sha256: string }>(
    `SELECT f.file_id, f.size_bytes, f.sha256 FROM files f
     WHERE (SELECT count(*) FROM file_copies c
            WHERE c.file_id = f.file_id AND c.state = 'verified' AND NOT (c.storage_id = ANY($2::text[]))) < $1
       AND NOT EXISTS (SELECT 1 FROM file_copies p WHERE p.file_id = f.file_id AND p.state = 'pending'
                       AND p.created_at > now() - make_interval(secs => $3::double precision / 1000))
     ORDER BY f.created_at, f.file_id LIMIT $4`,
    [options.required, [...options.lostStorageIds], options.pendingStaleMs, options.limit],
  );
  return rows.map((r) => ({ file_id: r.file_id, size_bytes: Number(r.size_bytes), sha256: r.sha256 }));
}

/** How many catalogued files have fewer than `required` verified copies (on SEs not lost). */
export async function countUnderReplicated(
  db: Queryable,
  required: number,
  lostStorageIds: readonly string[] = [],
): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM files f
     WHERE (SELECT count(*) FROM file_copies c
            WHERE c.file_id = f.file_id AND c.state = 'verified' AND NOT (c.storage_id = ANY($2::text[]))) < $1`,
    [required, [...lostStorageIds]],
  );
  return rows[0]?.n ?? 0;
}

/** Stale `pending` rows (a copier died): removed so the file can be copied again. @returns how many. */
export async function dropStalePending(db: Queryable, pendingStaleMs: number): Promise<number> {
  const result = await db.query(
    `DELETE FROM file_copies WHERE state = 'pending'
     AND created_at <= now() - make_interval(secs => $1::double precision / 1000)`,
    [pendingStaleMs],
  );
  return result.rowCount ?? 0;
}

/** Verified copies whose last verification is oldest, at most `limit`, joined with their size. */
export async function copiesToAudit(
  db: Queryable,
  olderThanMs: number,
  limit: number,
): Promise<Array<FileCopy & { size_bytes: number }>> {
  const { rows } = await db.query(
    `SELECT c.*, f.size_bytes FROM file_copies c JOIN files f ON f.file_id = c.file_id
     WHERE c.state = 'verified' AND c.verified_at <= now() - make_interval(secs => $1::double precision / 1000)
     ORDER BY c.verified_at, c.file_id LIMIT $2`,
    [olderThanMs, limit],
  );
  return rows.map((r) => ({ ...decode(r), size_bytes: Number(r.size_bytes) }));
}

/** Verified copies of a file. */
export async function countVerified(db: Queryable, fileId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM file_copies WHERE file_id = $1 AND state = 'verified'`,
    [fileId],
  );
  return rows[0]?.n ?? 0;
}
