import type { Readable } from 'node:stream';

/** What the SE knows about a stored file. */
export interface FileMeta {
  fileId: string;
  sizeBytes: number;
  /** Lower-case hex SHA-256 of the content. */
  sha256: string;
  contentType: string;
  /** ISO 8601. */
  createdAt: string;
}

/** A backend's view of its space, from one probe. */
export interface BackendProbe {
  /** Capacity, bytes (filesystem size or quota; S3 soft limit). */
  totalBytes: number;
  /** Bytes in use (filesystem used or bytes held by this SE). */
  usedBytes: number;
  /** Bytes that can still be written, before reservations and headroom. */
  freeBytes: number;
  /** Free inodes / all inodes of the filesystem holding data or staging (1 when not applicable). */
  freeInodeRatio: number;
  /** `undefined` when fine, else why the backend cannot serve (disk error, read-only filesystem, S3 unreachable). */
  failure: string | undefined;
}

/** An inclusive byte range. */
export interface ByteRange {
  start: number;
  end: number;
}

/**
 * Where completed files live. The SE stages upload bytes on local disk in
 * every case; a backend only publishes whole, checked files, reads them and
 * deletes them.
 */
export interface BlobBackend {
  readonly kind: 'local' | 's3';
  /** Prepares folders or the bucket and counts what is stored. @throws PolyvisionError `storage_failure`. */
  init(): Promise<void>;
  /**
   * Measures space. `stagedBytes` (bytes sitting in the staging area) lets
   * quota/soft-limit accounting count in-flight bytes as used.
   */
  probe(stagedBytes: number): Promise<BackendProbe>;
  /**
   * Makes a staged, fsynced file visible as `meta.fileId`, atomically and
   * without overwriting: either the whole file becomes readable or nothing
   * does. The staged file is consumed (moved or deleted) on success.
   *
   * @throws PolyvisionError `file_exists` (409) if the id is taken, `storage_failure` on I/O errors.
   */
  publish(stagedPath: string, meta: FileMeta): Promise<void>;
  /** The file's metadata, or `undefined`. */
  stat(fileId: string): Promise<FileMeta | undefined>;
  /** Streams the file (or a range of it). @throws PolyvisionError `file_not_found`. */
  read(fileId: string, range?: ByteRange): Promise<Readable>;
  /** Deletes; returns whether it existed. */
  delete(fileId: string): Promise<boolean>;
  /** Releases clients. */
  close(): Promise<void>;
}
