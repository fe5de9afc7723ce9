import type { UploadKind } from '@polyvision/shared';
import type { Queryable } from '../db/index.ts';

/** A tus upload as PostgreSQL holds it (table `uploads`, migrations 0001 and 0100). */
export interface UploadRow {
  upload_id: string;
  organization_id: string;
  match_id: string;
  kind: UploadKind;
  filename: string;
  size_bytes: number;
  offset_bytes: number;
  sha256: string;
  storage_id: string;
  file_id: string;
  se_upload_id: string;
  reservation_id: string;
  edge_id: string | null;
  token_id: string | null;
  status: 'receiving' | 'completed' | 'terminated' | 'expired' | 'failed';
  relocations: number;
  created_at: string;
  expires_at: string;
}

const COLUMNS = `upload_id, organization_id, match_id, kind, filename, size_bytes, offset_bytes, sha256,
  storage_id, file_id, se_upload_id, reservation_id, edge_id, token_id, status, relocations, created_at, expires_at`;

type RawRow = Omit<UploadRow, 'size_bytes' | 'offset_bytes' | 'created_at' | 'expires_at'> & {
  size_bytes: string | number;
  offset_bytes: string | number;
  created_at: Date | string;
  expires_at: Date | string;
};

function decode(row: RawRow): UploadRow {
  return {
    ...row,
    size_bytes: Number(row.size_bytes),
    offset_bytes: Number(row.offset_bytes),
    created_at: new Date(row.created_at).toISOString(),
    expires_at: new Date(row.expires_at).toISOString(),
  };
}

/** Inserts a new upload in state `receiving`. */
export async function insertUpload(
  db: Queryable,
  row: Omit<UploadRow, 'offset_bytes' | 'status' | 'relocations' | 'created_at' | 'expires_at'> & {
    expiresInMs: number;
  },
): Promise<UploadRow> {
  const { rows } = await db.query<RawRow>(
    `INSERT INTO uploads (upload_id, organization_id, match_id, kind, filename, size_bytes, sha256, storage_id,
       file_id, se_upload_id, reservation_id, edge_id, token_id, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, now() + $14::double precision * interval '1 millisecond')
     RETURNING ${COLUMNS}`,
    [
      row.upload_id,
      row.organization_id,
      row.match_id,
      row.kind,
      row.filename,
      row.size_bytes,
      row.sha256,
      row.storage_id,
      row.file_id,
      row.se_upload_id,
      row.reservation_id,
      row.edge_id,
      row.token_id,
      row.expiresInMs,
    ],
  );
  return decode(rows[0] as RawRow);
}

/** The upload, or null. */
export async function getUploadRow(db: Queryable, uploadId: string): Promise<UploadRow | null> {
  const { rows } = await db.query<RawRow>(`SELECT ${COLUMNS} FROM uploads WHERE upload_id = $1`, [uploadId]);
  return rows[0] ? decode(rows[0]) : null;
}

/** Records the SE's committed offset (informational; the SE is the truth). */
export async function setUploadOffset(db: Queryable, uploadId: string, offsetBytes: number): Promise<void> {
  await db.query(
    `UPDATE uploads SET offset_bytes = $2, updated_at = now() WHERE upload_id = $1 AND status = 'receiving'`,
    [uploadId, offsetBytes],
  );
}

/** Moves an open upload to another SE (its bytes start again from 0). @returns false when it is no longer open. */
export async function relocateUpload(
  db: Queryable,
  uploadId: string,
  target: { storage_id: string; se_upload_id: string; reservation_id: string; file_id: string },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE uploads SET storage_id = $2, se_upload_id = $3, reservation_id = $4, file_id = $5, offset_bytes = 0,
       relocations = relocations + 1, updated_at = now()
     WHERE upload_id = $1 AND status = 'receiving'`,
    [uploadId, target.storage_id, target.se_upload_id, target.reservation_id, target.file_id],
  );
  return rowCount === 1;
}

/** Ends an open upload as `terminated`, `expired` or `failed` (with the reason). @returns false when it was not open. */
export async function endUpload(
  db: Queryable,
  uploadId: string,
  status: 'terminated' | 'expired' | 'failed',
  failure?: Record<string, unknown>,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE uploads SET status = $2, failure = $3::jsonb, updated_at = now() WHERE upload_id = $1 AND status = 'receiving'`,
    [uploadId, status, failure ? JSON.stringify(failure) : null],
  );
  return rowCount === 1;
}

/**
 * Claims open uploads past their expiry for the sweep (`FOR UPDATE SKIP
 * LOCKED`, so replicas sweeping together take different rows); run inside a transaction.
 */
export async function claimExpiredUploads(tx: Queryable, limit: number): Promise<UploadRow[]> {
  const { rows } = await tx.query<RawRow>(
    `SELECT ${COLUMNS} FROM uploads WHERE status = 'receiving' AND expires_at < now()
     ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED`,
    [limit],
  );
  return rows.map(decode);
}
