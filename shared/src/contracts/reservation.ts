import { z } from 'zod';
import { isoDateTime, safeId, sizeBytes } from './safe-id.ts';

/** `POST /api/v1/reservations` body: reserve `size_bytes` before any byte moves. */
export const reservationRequestSchema = z.object({
  size_bytes: sizeBytes.min(1),
  /** How long the reservation holds without a write, in ms; the SE picks a default when absent. */
  ttl_ms: z
    .number()
    .int()
    .min(1)
    .max(7 * 24 * 3600 * 1000)
    .optional(),
});
export type ReservationRequest = z.infer<typeof reservationRequestSchema>;

/** `201` answer: the reservation to write against, and when it lapses. */
export const reservationResponseSchema = z.object({
  reservation_id: safeId,
  expires_at: isoDateTime,
});
export type ReservationResponse = z.infer<typeof reservationResponseSchema>;

/** `507 Insufficient Storage` body (RFC 4918 §11.5): what is free and what was asked, in bytes. */
export const insufficientStorageBodySchema = z.looseObject({
  code: z.literal('insufficient_storage'),
  message: z.string(),
  available: sizeBytes,
  requested: sizeBytes,
});
export type InsufficientStorageBody = z.infer<typeof insufficientStorageBodySchema>;
