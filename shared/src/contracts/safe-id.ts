import { z } from 'zod';

/**
 * An identifier that may become part of a file path or a Redis/Kafka key:
 * 1–128 characters from `A–Z a–z 0–9 - _ .`, not starting with `.`, and
 * never containing `..`. So `organization_id`, `match_id`, `storage_id`,
 * `job_id`… can never escape a folder (`../`), hide a file or carry `/`.
 */
export const safeId = z
  .string()
  .min(1, { message: 'an id of 1 to 128 characters' })
  .max(128, { message: 'an id of 1 to 128 characters' })
  .regex(/^[A-Za-z0-9_-][A-Za-z0-9._-]*$/, {
    message: 'an id of letters, digits, "-", "_", "." (not starting with ".")',
  })
  .refine((value) => !value.includes('..'), { message: 'an id without ".."' });

export type SafeId = z.infer<typeof safeId>;

/** Non-negative safe integer byte count (sizes stay exact below 2^53). */
export const sizeBytes = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

/** ISO 8601 date-time with offset (`2026-11-20T23:00:00.000Z`). */
export const isoDateTime = z.iso.datetime({ offset: true });
