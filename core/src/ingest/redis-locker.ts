import { randomUUID } from 'node:crypto';
import { ERRORS, type Lock, type Locker, type RequestRelease } from '@tus/utils';
import type { Redis } from 'ioredis';

/** Options of {@link RedisLocker}. Durations in ms. */
export interface RedisLockerOptions {
  /** Commands connection. */
  redis: Redis;
  /** A second connection used only to SUBSCRIBE (Redis needs one of its own). */
  subscriber: Redis;
  /** @defaultValue 'tus:lock:' */
  keyPrefix?: string;
  /** Lock lease; renewed every third of it while held. A killed holder frees it after this. @defaultValue 10_000 */
  leaseMs?: number;
  /** Give up acquiring after this (tus answers 500 `failed to acquire lock`). @defaultValue 30_000 */
  acquireTimeoutMs?: number;
  /** Pause between acquisition attempts. @defaultValue 50 */
  retryMs?: number;
}

/**
 * Extends the lease only for its holder.
 * KEYS[1] lock key. ARGV[1] holder token; ARGV[2] lease ms. Returns 1 when extended, 0 otherwise.
 */
const EXTEND = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`;

/**
 * Deletes the lock only for its holder.
 * KEYS[1] lock key. ARGV[1] holder token. Returns 1 when deleted, 0 otherwise.
 */
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

/**
 * The tus `Locker` (tus-node-server's locker interface) across ingest
 * replicas, on Redis: a lock is `SET key token NX PX lease`, renewed by its
 * holder every lease/3 and released by compare-and-delete, so a killed
 * replica's lock lapses after one lease and another replica can continue
 * the upload. A request that finds the lock held publishes on
 * `<prefix>release:<id>`; the holder's `requestRelease` then ends its
 * request (tus's "cancel the older request" rule for half-open connections).
 */
export class RedisLocker implements Locker {
  readonly #o: Required<Omit<RedisLockerOptions, 'redis' | 'subscriber'>> &
    Pick<RedisLockerOptions, 'redis' | 'subscriber'>;
  readonly #releaseHandlers = new Map<string, RequestRelease>();
  #subscribed: Promise<void> | undefined;

  constructor(options: RedisLockerOptions) {
    this.#o = { keyPrefix: 'tus:lock:', leaseMs: 10_000, acquireTimeoutMs: 30_000, retryMs: 50, ...options };
  }

  newLock(id: string): Lock {
    return new RedisLock(this, id);
  }

  /** @internal */
  get options() {
    return this.#o;
  }

  /** @internal Registers the holder's release callback and makes sure the subscription runs. */
  async listen(id: string, requestRelease: RequestRelease | undefined): Promise<void> {
    if (requestRelease) this.#releaseHandlers.set(id, requestRelease);
    this.#subscribed ??= this.#subscribe().catch((error) => {
      this.#subscribed = undefined; // Redis was down: subscribe again on the next lock
      throw error;
    });
    await this.#subscribed;
  }

  /** @internal */
  forget(id: string): void {
    this.#releaseHandlers.delete(id);
  }

  #listening = false;

  async #subscribe(): Promise<void> {
    const pattern = `${this.#o.keyPrefix}release:*`;
    if (!this.#listening) {
      this.#listening = true;
      this.#o.subscriber.on('pmessage', (_pattern: string, channel: string) => {
        const id = channel.slice(`${this.#o.keyPrefix}release:`.length);
        const handler = this.#releaseHandlers.get(id);
        if (handler) void Promise.resolve(handler()).catch(() => undefined);
      });
    }
    await this.#o.subscriber.psubscribe(pattern);
  }
}

class RedisLock implements Lock {
  readonly #locker: RedisLocker;
  readonly #id: string;
  readonly #token = randomUUID();
  #renewTimer: NodeJS.Timeout | undefined;

  constructor(locker: RedisLocker, id: string) {
    this.#locker = locker;
    this.#id = id;
  }

  get #key(): string {
    return `${this.#locker.options.keyPrefix}${this.#id}`;
  }

  async lock(signal: AbortSignal, requestRelease: RequestRelease): Promise<void> {
    const { redis, leaseMs, acquireTimeoutMs, retryMs, keyPrefix } = this.#locker.options;
    await this.#locker.listen(this.#id, undefined);
    const deadline = Date.now() + acquireTimeoutMs;
    let asked = false;
    for (;;) {
      if (signal.aborted) throw ERRORS.ERR_LOCK_TIMEOUT;
      const ok = await redis.set(this.#key, this.#token, 'PX', leaseMs, 'NX');
      if (ok === 'OK') break;
      if (!asked) {
        asked = true;
        await redis.publish(`${keyPrefix}release:${this.#id}`, this.#token);
      }
      if (Date.now() >= deadline) throw ERRORS.ERR_LOCK_TIMEOUT;
      await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
    await this.#locker.listen(this.#id, requestRelease);
    const renew = () => {
      this.#renewTimer = setTimeout(
        async () => {
          const extended = await redis.eval(EXTEND, 1, this.#key, this.#token, String(leaseMs)).catch(() => 0);
          if (extended === 1) renew();
          else void Promise.resolve(requestRelease()).catch(() => undefined);
        },
        Math.max(10, Math.floor(leaseMs / 3)),
      );
      this.#renewTimer.unref();
    };
    renew();
  }

  async unlock(): Promise<void> {
    clearTimeout(this.#renewTimer);
    this.#locker.forget(this.#id);
    await this.#locker.options.redis.eval(RELEASE, 1, this.#key, this.#token);
  }
}
