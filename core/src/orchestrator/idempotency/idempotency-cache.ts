import type { Redis } from 'ioredis';

/**
 * The Redis fast path of command idempotency (seeds, orchestrator-ha-decision.md):
 * `job:processed:{job_id}` kept 7 days once a job's submission was applied.
 * The database (`processed_messages`, the job row) is the final word: when
 * the cache is unreachable or wrong, duplicates are still refused there.
 */
export interface IdempotencyCache {
  /** Whether the key is set; `null` when the cache could not answer. */
  has(key: string): Promise<boolean | null>;
  /** Sets the key for `ttlMs`; errors are swallowed (returns false). */
  set(key: string, ttlMs: number): Promise<boolean>;
  close(): Promise<void>;
}

/** 7 days, the seeds' TTL of `job:processed:{job_id}`. */
export const JOB_PROCESSED_TTL_MS = 7 * 24 * 3600 * 1000;

/** `IdempotencyCache` on Redis (ioredis). Give it a client with a short command timeout and no offline queue. */
export class RedisIdempotencyCache implements IdempotencyCache {
  readonly #redis: Redis;
  readonly #prefix: string;

  /** @param prefix - prepended to every key (tests isolate themselves). @defaultValue '' */
  constructor(redis: Redis, prefix = '') {
    this.#redis = redis;
    this.#prefix = prefix;
  }

  async has(key: string): Promise<boolean | null> {
    try {
      return (await this.#redis.exists(this.#prefix + key)) === 1;
    } catch {
      return null;
    }
  }

  async set(key: string, ttlMs: number): Promise<boolean> {
    try {
      await this.#redis.set(this.#prefix + key, '1', 'PX', ttlMs);
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    this.#redis.disconnect();
  }
}

/** `IdempotencyCache` in memory (embedded default, tests). */
export class MemoryIdempotencyCache implements IdempotencyCache {
  readonly #keys = new Map<string, number>();
  /** When true, every call fails like an unreachable Redis (tests). */
  down = false;

  async has(key: string): Promise<boolean | null> {
    if (this.down) return null;
    const expiresAt = this.#keys.get(key);
    return expiresAt !== undefined && expiresAt > Date.now();
  }

  async set(key: string, ttlMs: number): Promise<boolean> {
    if (this.down) return false;
    this.#keys.set(key, Date.now() + ttlMs);
    return true;
  }

  async close(): Promise<void> {}
}
