import { PolyvisionError } from '@polyvision/shared';
import type { Database } from '../../db/index.ts';

/** A stage output's row in the `files` catalog (migrations 0001 and 0200). */
export interface OutputRow {
  file_id: string;
  storage_id: string;
  object_key: string;
  size_bytes: number;
  sha256: string;
  kind: string;
  content_type: string | null;
}

/** What {@link recordOutput} writes. */
export interface OutputRecord extends OutputRow {
  job_id: string;
  stage: string;
  model_version: string;
  organization_id: string;
  match_id: string;
  /** Logical key `<org>/<match>/<stage>/<model_version>/<name…>`. */
  output_key: string;
  filename: string;
  location: string | null;
}

const COLUMNS = 'file_id, storage_id, object_key, size_bytes, sha256, kind, content_type';

function decode(row: Record<string, unknown>): OutputRow {
  return {
    file_id: String(row.file_id),
    storage_id: String(row.storage_id),
    object_key: String(row.object_key),
    size_bytes: Number(row.size_bytes),
    sha256: String(row.sha256),
    kind: String(row.kind),
    content_type: row.content_type === null || row.content_type === undefined ? null : String(row.content_type),
  };
}

/** The catalog row of output `outputKey` of job `jobId`, if any. */
export async function findOutput(db: Database, jobId: string, outputKey: string): Promise<OutputRow | null> {
  const result = await db.query(`SELECT ${COLUMNS} FROM files WHERE job_id = $1 AND output_key = $2`, [
    jobId,
    outputKey,
  ]);
  const row = result.rows[0];
  return row ? decode(row) : null;
}

/** Removes a catalog row whose file is gone from its SE (so that a new copy can take its place). */
export async function forgetOutput(db: Database, fileId: string): Promise<void> {
  await db.query(`DELETE FROM files WHERE file_id = $1 AND output_key IS NOT NULL`, [fileId]);
}

/**
 * Records a stage output, in one transaction, under its identity
 * (`job_id`, `output_key`) — the unique index `files_stage_output`:
 *
 * - no row yet → insert `record`;
 * - a row with the same sha256 → keep it (a re-run, or a concurrent run
 *   that won): nothing is written, the existing row is returned;
 * - a row with another sha256 → replaced by `record` (the old row is
 *   returned as `replaced`, so the caller can delete its bytes).
 *
 * The row is locked (`FOR UPDATE`) and the insert uses `ON CONFLICT DO
 * NOTHING` + a re-read, so concurrent writers of one identity end with one row.
 *
 * @returns `row`: the row now in the catalog; `inserted`: whether it is `record`;
 *   `replaced`: the row it replaced, if any.
 */
export async function recordOutput(
  db: Database,
  record: OutputRecord,
): Promise<{ row: OutputRow; inserted: boolean; replaced: OutputRow | null }> {
  return db.transaction(async (tx) => {
    for (let round = 0; round < 3; round++) {
      const current = await tx.query(`SELECT ${COLUMNS} FROM files WHERE job_id = $1 AND output_key = $2 FOR UPDATE`, [
        record.job_id,
        record.output_key,
      ]);
      const existing = current.rows[0] ? decode(current.rows[0]) : null;
      if (existing && existing.sha256 === record.sha256) return { row: existing, inserted: false, replaced: null };
      if (existing) {
        await tx.query(`DELETE FROM files WHERE file_id = $1`, [existing.file_id]);
      }
      const inserted = await tx.query(
        `INSERT INTO files (file_id, organization_id, match_id, kind, filename, size_bytes, sha256, storage_id,
                            object_key, location, output_key, job_id, stage, model_version, content_type)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
         ON CONFLICT DO NOTHING`,
        [
          record.file_id,
          record.organization_id,
          record.match_id,
          record.kind,
          record.filename,
          record.size_bytes,
          record.sha256,
          record.storage_id,
          record.object_key,
          record.location,
          record.output_key,
          record.job_id,
          record.stage,
          record.model_version,
          record.content_type,
        ],
      );
      if (inserted.rowCount === 1) return { row: decode({ ...record }), inserted: true, replaced: existing };
      // A concurrent writer inserted this identity (or this file id) since our read: read again.
    }
    const final = await tx.query(`SELECT ${COLUMNS} FROM files WHERE job_id = $1 AND output_key = $2`, [
      record.job_id,
      record.output_key,
    ]);
    if (!final.rows[0]) {
      throw new PolyvisionError(
        'catalog_conflict',
        `output ${record.output_key} of ${record.job_id}: insert kept conflicting`,
        {
          retriable: true,
        },
      );
    }
    return { row: decode(final.rows[0]), inserted: false, replaced: null };
  });
}
