import { ValidationError } from '../errors/index.ts';

/** What a {@link TtlStore} holds for a key that has not expired. */
export interface TtlRecord {
  /** The holder's value (for elections: who leads, e.g. `host:pid:uuid`). */
  readonly value: string;
  /** Milliseconds until the record expires, as the store sees it (>= 0). */
  readonly ttlMs: number;
  /**
   * The fencing term issued by the {@link TtlStore.insertIfNotExists} that
   * created this record (>= 1). Swaps keep it; only a new insert raises it.
   */
  readonly term: number;
}

/**
 * A key-value store whose records expire, with the atomic operations that
 * leader election needs (the `ITTLStorage` of seed vvm-orchestration.md,
 * plus fencing terms).
 *
 * Semantics every driver keeps (checked by the conformance suite in
 * `shared/test/leadership/conformance.ts`):
 * - an expired record is absent for every operation;
 * - each successful insert for a key returns a term strictly greater than
 *   every term issued before for that key, also across store instances and
 *   process restarts where the backing store persists (Redis, PostgreSQL);
 * - all operations are atomic with respect to each other.
 *
 * Keys and values are non-empty strings; TTLs are positive integer
 * milliseconds. Bad input throws a {@link ValidationError} with code
 * `ttl_store_invalid_argument`; an unreachable backend throws whatever its
 * client throws (the elections layer treats any throw as "could not reach").
 */
export interface TtlStore {
  /**
   * Stores `key = value` for `ttlMs` if the key is absent or expired
   * (Redis `SET NX PX` semantics).
   * @returns the new fencing term (>= 1), or `null` if the key is held.
   */
  insertIfNotExists(key: string, value: string, ttlMs: number): Promise<number | null>;
  /**
   * Replaces the value with `next` and resets the TTL to `ttlMs`, only if the
   * key is present and holds exactly `expected`. Keeps the term.
   * @returns whether the swap happened.
   */
  compareAndSwap(key: string, expected: string, next: string, ttlMs: number): Promise<boolean>;
  /**
   * Deletes the key only if it is present and holds exactly `expected`.
   * The term counter survives (the next insert gets a higher term).
   * @returns whether the delete happened.
   */
  compareAndDelete(key: string, expected: string): Promise<boolean>;
  /** @returns the live record, or `null` if the key is absent or expired. */
  get(key: string): Promise<TtlRecord | null>;
  /**
   * Optional release notices: calls `onRelease` whenever a holder of `key`
   * deletes it with {@link compareAndDelete} (a graceful hand-over), so
   * followers can try at once instead of at their next retry. Best effort:
   * a notice may be lost (followers still retry on their interval).
   * @returns a function that stops watching.
   */
  watchReleases?(key: string, onRelease: () => void): () => void;
}

/** Throws a ValidationError unless `key` is a non-empty string. */
export function assertKey(key: unknown, name = 'key'): asserts key is string {
  if (typeof key !== 'string' || key.length === 0) {
    throw new ValidationError('ttl_store_invalid_argument', `${name} must be a non-empty string, got ${show(key)}`);
  }
}

/** Throws a ValidationError unless `ttlMs` is a positive safe integer (milliseconds). */
export function assertTtlMs(ttlMs: unknown, name = 'ttlMs'): asserts ttlMs is number {
  if (typeof ttlMs !== 'number' || !Number.isSafeInteger(ttlMs) || ttlMs <= 0) {
    throw new ValidationError(
      'ttl_store_invalid_argument',
      `${name} must be a positive integer of milliseconds, got ${show(ttlMs)}`,
    );
  }
}

function show(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}
