import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Whether `token` is one of `tokens`. Compares SHA-256 digests in constant
 * time and visits every token, so timing says nothing about which prefix
 * matched. An empty list accepts nothing.
 */
export function isListedToken(tokens: readonly string[], token: string): boolean {
  const given = createHash('sha256').update(token).digest();
  let ok = false;
  for (const t of tokens) {
    if (timingSafeEqual(given, createHash('sha256').update(t).digest())) ok = true;
  }
  return ok;
}

/**
 * The token of an `Authorization: Bearer <token>` header (RFC 6750 §2.1), or
 * null when the header is absent or not of that form.
 */
export function bearerTokenOf(authorization: string | undefined): string | null {
  const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(authorization ?? '');
  return match?.[1] ?? null;
}
