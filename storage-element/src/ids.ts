import { randomUUID } from 'node:crypto';
import { safeId } from '@polyvision/shared';
import { seErrors } from './errors.ts';

/**
 * Checks an id that becomes part of a path or an S3 key (shared `safeId`:
 * 1–128 of `A–Z a–z 0–9 . _ -`, not starting with `.`, no `..`).
 *
 * @param what - the field's name, for the error message.
 * @throws ValidationError `invalid_id` (400).
 */
export function assertSafeId(what: string, value: unknown): string {
  const parsed = safeId.safeParse(value);
  if (!parsed.success) throw seErrors.invalidId(what, String(value));
  return parsed.data;
}

/** A new random id with a kind prefix (`r-…` reservation, `u-…` upload, `f-…` file). */
export function newId(prefix: 'r' | 'u' | 'f'): string {
  return `${prefix}-${randomUUID()}`;
}

/**
 * Parses a byte count: a JSON number, or with `fromHeader` a decimal header string.
 *
 * @throws ValidationError `invalid_size` for negative, fractional, non-numeric or unsafe values.
 */
export function parseSizeBytes(
  what: string,
  value: unknown,
  { allowZero = true, fromHeader = false }: { allowZero?: boolean; fromHeader?: boolean } = {},
): number {
  let n: number;
  if (typeof value === 'number' && !fromHeader) n = value;
  else if (typeof value === 'string' && fromHeader && /^\d{1,16}$/.test(value)) n = Number(value);
  else throw seErrors.invalidSize(what, value);
  if (!Number.isSafeInteger(n) || n < 0 || (!allowZero && n === 0)) throw seErrors.invalidSize(what, value);
  return n;
}
