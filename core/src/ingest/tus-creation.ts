import { PolyvisionError, parseTusMetadata, type UploadMetadata, uploadMetadataSchema } from '@polyvision/shared';
import type { EdgeIdentity } from './edge-tokens.ts';

/** Throws a {@link PolyvisionError} that the shared error handler turns into `{code, message, …details}`. */
export function fail(code: string, message: string, httpStatus: number, details: Record<string, unknown> = {}): never {
  throw new PolyvisionError(code, message, { httpStatus, details });
}

/** Limits of {@link checkCreation}. */
export interface CreationLimits {
  /** Largest `Upload-Length`, in bytes. */
  maxUploadBytes: number;
  /** Largest `Upload-Metadata` header, in bytes. */
  maxMetadataBytes: number;
}

/**
 * Checks a tus creation request (tus 1.0.0 "Creation" extension) before
 * anything is reserved:
 * - `Upload-Defer-Length` → 400 `upload_length_required` (not supported);
 * - `Upload-Length` a non-negative integer → else 400 `invalid_upload_length`;
 *   `0` → 400 `upload_empty` (an empty file has nothing to store; a 507 with
 *   `Retry-After` would make an obedient client retry forever);
 *   above `maxUploadBytes` → 413 `upload_too_large`;
 * - `Upload-Metadata` at most `maxMetadataBytes` (400 `metadata_too_large`),
 *   decoded and validated (400 `invalid_metadata` with `field`);
 * - its `organization_id` equal to the token's → else 403 `organization_forbidden`.
 *
 * @returns the validated metadata.
 * @throws PolyvisionError as listed.
 */
export function checkCreation(headers: Headers, edge: EdgeIdentity, limits: CreationLimits): UploadMetadata {
  if (headers.get('upload-defer-length')) {
    fail('upload_length_required', 'Upload-Length is required; deferred length is not supported', 400);
  }
  const lengthHeader = headers.get('upload-length');
  if (lengthHeader === null || !/^\d{1,16}$/.test(lengthHeader)) {
    fail('invalid_upload_length', 'Upload-Length must be a non-negative integer', 400);
  }
  const length = Number(lengthHeader);
  if (length === 0) {
    fail('upload_empty', 'Upload-Length is 0: an empty file cannot be uploaded', 400);
  }
  if (length > limits.maxUploadBytes) {
    fail('upload_too_large', `Upload-Length ${lengthHeader} exceeds the limit of ${limits.maxUploadBytes} bytes`, 413, {
      max_upload_bytes: limits.maxUploadBytes,
    });
  }
  const header = headers.get('upload-metadata') ?? '';
  if (Buffer.byteLength(header) > limits.maxMetadataBytes) {
    fail('metadata_too_large', `Upload-Metadata exceeds ${limits.maxMetadataBytes} bytes`, 400, {
      max_metadata_bytes: limits.maxMetadataBytes,
    });
  }
  let raw: Record<string, string>;
  try {
    raw = parseTusMetadata(header);
  } catch (error) {
    fail('invalid_metadata', `Upload-Metadata: ${(error as Error).message}`, 400);
  }
  const parsed = uploadMetadataSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    fail('invalid_metadata', `Upload-Metadata ${issue?.path.join('.') || '(root)'}: ${issue?.message}`, 400, {
      field: issue?.path.join('.') ?? null,
    });
  }
  if (parsed.data.organization_id !== edge.organization_id) {
    fail(
      'organization_forbidden',
      `this token belongs to organization "${edge.organization_id}", not "${parsed.data.organization_id}"`,
      403,
    );
  }
  return parsed.data;
}
