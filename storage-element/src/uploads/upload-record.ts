import type { FileMeta } from '../backends/blob-backend.ts';

/** Life of an upload: bytes arriving → being published → published. */
export type UploadState = 'open' | 'publishing' | 'completed';

/**
 * What is persisted about an upload in `<dataDir>/staging/<upload_id>.json`
 * (replaced atomically). The committed offset is not stored: it is the size
 * of `<upload_id>.part`, which every append fsyncs before answering.
 */
export interface UploadRecord {
  uploadId: string;
  fileId: string;
  sizeBytes: number;
  /** Expected lower-case hex sha256, when the client gave one. */
  sha256: string | null;
  contentType: string;
  reservationId: string;
  /** ISO 8601. */
  createdAt: string;
  state: UploadState;
  /** Set when completed (for idempotent `complete`). */
  file?: FileMeta;
  /** Epoch ms of completion. */
  completedAtMs?: number;
}

/** The public view of an upload (`GET /api/v1/uploads/:id`). */
export interface UploadView {
  upload_id: string;
  file_id: string;
  size_bytes: number;
  offset: number;
  sha256: string | null;
  reservation_id: string;
  expires_at: string | null;
  state: UploadState;
}
