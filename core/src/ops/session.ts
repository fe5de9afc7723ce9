import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/** Name of the ops session cookie. */
export const OPS_SESSION_COOKIE = 'pv_ops_session';

/**
 * Stateless operator sessions for the browser (the page's `EventSource`
 * cannot send an `Authorization` header, so the browser carries a cookie).
 *
 * Cookie value: `v1.<expires_at_ms>.<token_id>.<mac>`, where `token_id` is
 * the first 16 hex digits of SHA-256(operator token) (names which token
 * logged in, never reveals it) and `mac` = base64url HMAC-SHA-256 over
 * `v1.<expires_at_ms>.<token_id>` with a key derived from the whole
 * `OPS_TOKENS` list. Every ingest replica with the same `OPS_TOKENS` accepts
 * the cookie (no shared session store); changing the list (revoking a token)
 * invalidates every session at once.
 */
export class OpsSessions {
  readonly #key: Buffer;
  readonly #tokenIds: ReadonlySet<string>;
  readonly #ttlMs: number;

  /**
   * @param tokens - the operator tokens (`OPS_TOKENS`).
   * @param ttlMs - session lifetime in milliseconds.
   */
  constructor(tokens: readonly string[], ttlMs: number) {
    const material = [...tokens].sort().join('\n');
    this.#key = createHash('sha256').update(`polyvision-ops-session-v1\n${material}`).digest();
    this.#tokenIds = new Set(tokens.map(tokenId));
    this.#ttlMs = ttlMs;
  }

  /** Session lifetime in milliseconds (the cookie's Max-Age). */
  get ttlMs(): number {
    return this.#ttlMs;
  }

  /** A cookie value for a session opened now with `token` (already verified by the caller). */
  issue(token: string, nowMs = Date.now()): string {
    const body = `v1.${nowMs + this.#ttlMs}.${tokenId(token)}`;
    return `${body}.${this.#mac(body)}`;
  }

  /**
   * Checks a cookie value: well-formed, MAC valid (constant-time compare), not
   * expired, issued for a token still listed.
   * @returns the token id, or null.
   */
  verify(value: string | undefined, nowMs = Date.now()): string | null {
    if (!value || value.length > 200) return null;
    const parts = value.split('.');
    if (parts.length !== 4 || parts[0] !== 'v1') return null;
    const [, expiresAt, id, mac] = parts as [string, string, string, string];
    const expected = Buffer.from(this.#mac(`v1.${expiresAt}.${id}`));
    const given = Buffer.from(mac);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    const expiresAtMs = Number(expiresAt);
    if (!Number.isSafeInteger(expiresAtMs) || expiresAtMs <= nowMs) return null;
    return this.#tokenIds.has(id) ? id : null;
  }

  /** When a well-formed, correctly signed cookie expires (epoch ms), else null. */
  expiresAtMs(value: string): number | null {
    if (!this.verify(value, 0)) return null;
    return Number(value.split('.')[1]);
  }

  #mac(body: string): string {
    return createHmac('sha256', this.#key).update(body).digest('base64url');
  }
}

/** The first 16 hex digits of SHA-256(token): a safe name for a token in logs and cookies. */
export function tokenId(token: string): string {
  return createHash('sha256').update(token).digest('hex').slice(0, 16);
}
