import { parseRetryAfterMs as parseRetryAfter } from '@polyvision/shared';

/**
 * Parses a `Retry-After` value (RFC 9110 §10.2.3: delay-seconds or an
 * HTTP-date) into milliseconds from `nowMs`: the shared HTTP client's parser,
 * with null for "none" as the uploader's header reads give.
 * @returns null when absent or unparsable; 0 for a date in the past.
 */
export function parseRetryAfterMs(value: string | null | undefined, nowMs = Date.now()): number | null {
  return parseRetryAfter(value ?? undefined, nowMs) ?? null;
}
