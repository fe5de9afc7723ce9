import { type Logger, silentLogger } from '@polyvision/shared';
import { MemoryLocker } from '@tus/server';
import type { Lock, Locker, RequestRelease } from '@tus/utils';

/** Options of {@link DegradingLocker}. */
export interface DegradingLockerOptions {
  /** The shared locker (Redis). */
  shared: Locker;
  /** Longest wait for the shared lock before the local one is used, ms. @defaultValue 2_000 */
  sharedTimeoutMs?: number;
  /** Whether the shared locker's connection is up now (ioredis `status === 'ready'`); when false the local lock is used at once. @defaultValue always */
  sharedAvailable?: () => boolean;
  logger?: Logger;
}

/**
 * The tus locker ingest uses: the shared (Redis) lock when Redis answers, a
 * lock in this process's memory when it does not (an error, or no answer
 * within `sharedTimeoutMs`). Degraded, two requests for one upload on the
 * SAME replica still wait for each other; on two replicas they are no longer
 * kept apart here, and the storage element keeps them apart instead: it
 * lets one append run per upload (`409 upload_busy` to the other) and
 * appends only at its own offset (`409` otherwise), so no byte is written
 * twice or out of place — the tus client retries with `HEAD`.
 */
export class DegradingLocker implements Locker {
  readonly #shared: Locker;
  readonly #local = new MemoryLocker();
  readonly #timeoutMs: number;
  readonly #logger: Logger;
  readonly #available: () => boolean;
  #degradedSinceMs: number | null = null;

  constructor(options: DegradingLockerOptions) {
    this.#shared = options.shared;
    this.#available = options.sharedAvailable ?? (() => true);
    this.#timeoutMs = options.sharedTimeoutMs ?? 2_000;
    this.#logger = options.logger ?? silentLogger;
  }

  /** Epoch ms since locks are taken locally, or null while the shared locker works. */
  get degradedSinceMs(): number | null {
    return this.#degradedSinceMs;
  }

  newLock(id: string): Lock {
    const shared = this.#shared.newLock(id);
    const local = this.#local.newLock(id);
    let held: Lock | null = null;
    return {
      lock: async (signal: AbortSignal, requestRelease: RequestRelease) => {
        // The local lock first: requests on this replica always queue here, shared lock or not.
        await local.lock(signal, requestRelease);
        try {
          if (!this.#available()) throw new Error('the shared locker is not connected');
          await raceTimeout(shared.lock(signal, requestRelease), this.#timeoutMs);
          held = shared;
          if (this.#degradedSinceMs !== null) {
            this.#logger.info('tus locks shared again (Redis answers)');
            this.#degradedSinceMs = null;
          }
        } catch (error) {
          if (isLockTimeout(error)) {
            await local.unlock();
            throw error;
          }
          if (this.#degradedSinceMs === null) {
            this.#degradedSinceMs = Date.now();
            this.#logger.warn(
              { err: error },
              'tus locks local to this replica: Redis unreachable (the SE serializes appends)',
            );
          }
          held = null;
        }
      },
      unlock: async () => {
        try {
          if (held) await raceTimeout(held.unlock(), this.#timeoutMs).catch(() => undefined);
        } finally {
          held = null;
          await local.unlock();
        }
      },
    };
  }
}

/** tus's "lock held by another request past the timeout" (ERR_LOCK_TIMEOUT): not an outage. */
function isLockTimeout(error: unknown): boolean {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { status_code?: number }).status_code === 500 &&
    /lock/i.test(String((error as { body?: string }).body))
  );
}

function raceTimeout<T>(promise: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`shared lock: no answer within ${timeoutMs} ms`)), timeoutMs);
    }),
  ]).finally(() => clearTimeout(timer));
}
