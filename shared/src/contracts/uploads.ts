import { z } from 'zod';
import { safeId } from './safe-id.ts';

export const uploadKindSchema = z.enum(['panorama', 'camera', 'artifact']);
export type UploadKind = z.infer<typeof uploadKindSchema>;

/**
 * Decoded tus `Upload-Metadata` of `POST /api/v1/uploads` (tus 1.0.0
 * creation extension: comma-separated `key base64(value)` pairs; see
 * {@link parseTusMetadata}). `filename` is a single safe path segment.
 */
export const uploadMetadataSchema = z.object({
  organization_id: safeId,
  match_id: safeId,
  kind: uploadKindSchema,
  filename: safeId,
  /** Lower-case hex SHA-256 of the whole file. */
  sha256: z.string().regex(/^[0-9a-f]{64}$/, { message: '64 lower-case hex digits' }),
});
export type UploadMetadata = z.infer<typeof uploadMetadataSchema>;

/**
 * Decodes a tus `Upload-Metadata` header into a record (values base64
 * decoded as UTF-8; a key without value maps to ''). Validate the result
 * with {@link uploadMetadataSchema}.
 *
 * @throws Error with the bad pair when a value is not base64 or a key repeats.
 */
export function parseTusMetadata(header: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of header.split(',')) {
    const trimmed = pair.trim();
    if (!trimmed) continue;
    const [key, value = '', ...rest] = trimmed.split(' ');
    if (!key || rest.length > 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(value)) {
      throw new Error(`bad Upload-Metadata pair "${trimmed}"`);
    }
    if (key in out) throw new Error(`Upload-Metadata key "${key}" repeats`);
    out[key] = Buffer.from(value, 'base64').toString('utf8');
  }
  return out;
}

/** Encodes metadata for the tus `Upload-Metadata` header. */
export function formatTusMetadata(metadata: Record<string, string>): string {
  return Object.entries(metadata)
    .map(([key, value]) => `${key} ${Buffer.from(value, 'utf8').toString('base64')}`)
    .join(',');
}

/**
 * Response header by which the core confirms a completed upload to the edge:
 * the hex sha256 of the bytes it stored and verified. Sent on the final PATCH
 * and on a HEAD of a completed upload; the edge deletes its copy only when it
 * matches (edge/README.md, "Spool, upload and confirmation").
 */
export const UPLOAD_CONFIRMATION_HEADER = 'X-Content-SHA256';

/**
 * Response header of ingest on the same answers: `<verified>/<required>`
 * copies of the file (replication, core/src/replication). The confirmation
 * header is sent only once `verified >= required`.
 */
export const UPLOAD_COPIES_HEADER = 'Polyvision-Copies';
