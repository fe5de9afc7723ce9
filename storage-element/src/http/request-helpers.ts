import type { Context } from 'hono';
import { isWritableMode, type StorageElementConfig } from '../config.ts';
import { seErrors } from '../errors.ts';

/** Largest JSON request body accepted, bytes. */
export const MAX_JSON_BODY_BYTES = 64 * 1024;

/**
 * Reads a JSON object body (at most {@link MAX_JSON_BODY_BYTES}); an empty
 * body reads as `{}` when `optional`.
 *
 * @throws ValidationError `invalid_request` (400) for malformed JSON, a non-object, or a body too large.
 */
export async function readJsonObject(c: Context, { optional = false } = {}): Promise<Record<string, unknown>> {
  const declared = c.req.header('content-length');
  if (declared !== undefined && Number(declared) > MAX_JSON_BODY_BYTES) {
    throw seErrors.invalidRequest(`a JSON body of at most ${MAX_JSON_BODY_BYTES} bytes is expected`);
  }
  const text = await c.req.text();
  if (text.length > MAX_JSON_BODY_BYTES) {
    throw seErrors.invalidRequest(`a JSON body of at most ${MAX_JSON_BODY_BYTES} bytes is expected`);
  }
  if (text.trim() === '' && optional) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw seErrors.invalidRequest('the body is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw seErrors.invalidRequest('the body must be a JSON object');
  }
  return value as Record<string, unknown>;
}

/** @throws PolyvisionError `read_only_mode` (403) unless the SE is in `edit` or `rw`. */
export function assertWritable(config: StorageElementConfig): void {
  if (!isWritableMode(config.mode)) throw seErrors.readOnlyMode(config.mode);
}

/** Lower-case hex sha256 or null. @throws ValidationError `invalid_request` when given but malformed. */
export function parseSha256(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || !/^[0-9a-f]{64}$/.test(value)) {
    throw seErrors.invalidRequest('sha256 must be 64 lower-case hex digits');
  }
  return value;
}

/**
 * Whether `value` can be sent back as a `Content-Type` header: a string of
 * 1–200 printable ASCII characters (RFC 9110 §5.5: no CR, LF, NUL or other
 * control character; no obs-text).
 */
export function isHeaderSafeContentType(value: unknown): value is string {
  return typeof value === 'string' && /^[\x21-\x7e][\x20-\x7e]{0,199}$/.test(value);
}
