/**
 * `Retry-After` (RFC 9110 §10.2.3): either delay-seconds or an HTTP-date.
 */

/**
 * Parses a `Retry-After` value into milliseconds from `nowMs`.
 * @returns null when absent or unparsable; 0 for a date in the past.
 */
export function parseRetryAfterMs(value: string | null | undefined, nowMs = Date.now()): number | null {
  if (value === null || value === undefined) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return null;
  return Math.max(0, date - nowMs);
}
