/** One reservation: bytes promised to a writer before any byte moves. */
export interface Reservation {
  reservationId: string;
  /** Bytes promised. */
  sizeBytes: number;
  /** Bytes already written against it (staged); they count as used, not reserved. */
  writtenBytes: number;
  /** Lifetime without activity, ms; every append renews it. */
  ttlMs: number;
  /** Epoch ms after which the reservation lapses. */
  expiresAtMs: number;
  createdAtMs: number;
  /** The upload it backs, if any. */
  uploadId: string | null;
}

/** Bytes a reservation still holds back: promised and not yet written. */
export function outstandingBytes(r: Reservation): number {
  return Math.max(0, r.sizeBytes - r.writtenBytes);
}
