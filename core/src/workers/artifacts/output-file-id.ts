import { createHash } from 'node:crypto';

/**
 * The SE file id of a stage output: `o-<identity>-<content>-<name>`, where
 * `identity` is 16 hex digits of SHA-256(`jobId` NUL `outputKey`), `content`
 * the first 16 hex digits of the file's own SHA-256 and `name` the key's last
 * segment (cut to 80 characters). Deterministic: a re-run that produces the
 * same bytes names the same file (so an SE answering `409 file_exists` holds
 * exactly it), while new bytes get a new name (SE files are never
 * overwritten). SE ids are flat `safeId`s (storage-element/README.md,
 * "Conventions"), hence no `/`; the result has at most 116 characters
 * (StorageElementArtifactIo appends `-<8 hex>` when a dead run's open upload
 * still holds this name: at most 125).
 */
export function outputFileId(jobId: string, outputKey: string, sha256: string): string {
  const identity = createHash('sha256').update(`${jobId}\u0000${outputKey}`).digest('hex').slice(0, 16);
  const name = (outputKey.split('/').at(-1) ?? 'output').replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 80);
  return `o-${identity}-${sha256.slice(0, 16)}-${name.replace(/\.\.+/g, '.')}`;
}
