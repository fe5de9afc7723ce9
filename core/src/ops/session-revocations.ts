import { createHash } from 'node:crypto';
import { type Logger, silentLogger } from '@polyvision/shared';
import type { Redis } from 'ioredis';

/** Options of {@link SessionRevocations}. */
export interface SessionRevocationsOptions {
  /** Shared by every ingest replica; omitted: this replica only. */
  redis?: Pick<Redis, 'set' | 'exists'>;
  /** Prefix of the keys (`REDIS_KEY_PREFIX`). */
  keyPrefix?: string;
  logger?: Logger;
}

/**
 * Logged-out ops session cookies. The cookies are stateless (HMAC, see
 * OpsSessions), so a logout records the cookie's SHA-256 until the cookie
 * would have expired anyway: in this replica's memory and in Redis
 * (`ops:session_revoked:<sha256>`, `PX` = remaining lifetime) for the others.
 *
 * While Redis is unreachable a replica knows only the logouts it handled
 * itself (logged as a warning): the ops page stays usable during an outage,
 * and a cookie logged out elsewhere works there until Redis is back or the
 * cookie expires. Bearer operator tokens are unaffected.
 */
export class SessionRevocations {
  readonly #redis: SessionRevocationsOptions['redis'];
  readonly #prefix: string;
  readonly #logger: Logger;
  /** cookie hash → revoked until (epoch ms). */
  readonly #local = new Map<string, number>();

  constructor(options: SessionRevocationsOptions = {}) {
    this.#redis = options.redis;
    this.#prefix = `${options.keyPrefix ?? ''}ops:session_revoked:`;
    this.#logger = options.logger ?? silentLogger;
  }

  /**
   * Revokes `cookie` until `expiresAtMs` (its own expiry).
   * Never throws: a Redis failure is logged and the revocation stays local.
   */
  async revoke(cookie: string, expiresAtMs: number, nowMs = Date.now()): Promise<void> {
    const remainingMs = Math.max(1, Math.ceil(expiresAtMs - nowMs));
    const key = hashOf(cookie);
    this.#prune(nowMs);
    this.#local.set(key, expiresAtMs);
    try {
      await this.#redis?.set(`${this.#prefix}${key}`, '1', 'PX', remainingMs);
    } catch (error) {
      this.#logger.warn({ err: error }, 'ops logout recorded on this replica only: Redis unreachable');
    }
  }

  /** Whether `cookie` was logged out (here, or on any replica as far as Redis answers). */
  async isRevoked(cookie: string, nowMs = Date.now()): Promise<boolean> {
    const key = hashOf(cookie);
    const until = this.#local.get(key);
    if (until !== undefined && until > nowMs) return true;
    if (!this.#redis) return false;
    try {
      return (await this.#redis.exists(`${this.#prefix}${key}`)) === 1;
    } catch (error) {
      this.#logger.warn({ err: error }, 'ops session revocations unreadable: Redis unreachable');
      return false;
    }
  }

  #prune(nowMs: number): void {
    for (const [key, until] of this.#local) if (until <= nowMs) this.#local.delete(key);
  }
}

function hashOf(cookie: string): string {
  return createHash('sha256').update(cookie).digest('hex');
}
