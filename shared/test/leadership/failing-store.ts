import type { Clock, ManualClock, TtlRecord, TtlStore } from '../../src/leadership/index.ts';

/**
 * How {@link FailingStore} answers `compareAndSwap` once `fail()` was called:
 * - `reject`: rejects at once (a closed Redis connection: every command fails in a microtask);
 * - `hang`: never settles (a partition with no client timeout);
 * - `slow-reject`: rejects after `delayMs` on the clock (a command timeout);
 * - `slow-reply`: answers the inner store's reply after `delayMs` (a loaded server).
 */
export type FailureMode = 'reject' | 'hang' | 'slow-reject' | 'slow-reply';

/**
 * Wraps a real TtlStore and makes its renewals (`compareAndSwap`) fail in a
 * chosen way from `fail()` on, counting and timing every attempt. The other
 * operations pass through, so release and acquisition still work.
 *
 * After `maxAttempts` failed attempts every further one hangs, so that a
 * renewal loop that spins (the bug this store was written to catch) stops
 * and the test can count its attempts instead of never returning.
 */
export class FailingStore implements TtlStore {
  readonly #inner: TtlStore;
  readonly #clock: Clock;
  #mode: FailureMode | undefined;
  #delayMs = 0;
  /** Clock readings at which `compareAndSwap` was called, since `fail()`. */
  readonly attemptsAtMs: number[] = [];

  readonly #maxAttempts: number;

  /** @param maxAttempts - failed attempts after which every attempt hangs. @defaultValue 1000 */
  constructor(inner: TtlStore, clock: Clock, maxAttempts = 1_000) {
    this.#inner = inner;
    this.#clock = clock;
    this.#maxAttempts = maxAttempts;
  }

  /** From now on, `compareAndSwap` fails as `mode` says. @param delayMs - for the slow modes. */
  fail(mode: FailureMode, delayMs = 0): void {
    this.#mode = mode;
    this.#delayMs = delayMs;
    this.attemptsAtMs.length = 0;
  }

  /** Lets renewals through again. */
  heal(): void {
    this.#mode = undefined;
  }

  compareAndSwap(key: string, expected: string, next: string, ttlMs: number): Promise<boolean> {
    const mode = this.#mode;
    if (!mode) return this.#inner.compareAndSwap(key, expected, next, ttlMs);
    this.attemptsAtMs.push(this.#clock.now());
    if (this.attemptsAtMs.length > this.#maxAttempts) return new Promise<boolean>(() => undefined);
    const failure = new Error('injected store failure: connection is closed');
    switch (mode) {
      case 'reject':
        return Promise.reject(failure);
      case 'hang':
        return new Promise<boolean>(() => undefined);
      case 'slow-reject':
        return new Promise<boolean>((_, reject) => this.#clock.setTimer(() => reject(failure), this.#delayMs));
      case 'slow-reply':
        return new Promise<boolean>((resolve, reject) =>
          this.#clock.setTimer(
            () => this.#inner.compareAndSwap(key, expected, next, ttlMs).then(resolve, reject),
            this.#delayMs,
          ),
        );
    }
  }

  insertIfNotExists(key: string, value: string, ttlMs: number): Promise<number | null> {
    return this.#inner.insertIfNotExists(key, value, ttlMs);
  }

  compareAndDelete(key: string, expected: string): Promise<boolean> {
    return this.#inner.compareAndDelete(key, expected);
  }

  get(key: string): Promise<TtlRecord | null> {
    return this.#inner.get(key);
  }
}

/**
 * A manual clock whose timers fire `earlyMs` before they are due, as Node's
 * do when read on `performance.now()` (they run on libuv's loop time, whole
 * milliseconds taken at the start of the loop turn): a timer set for the
 * renew deadline can fire just before it.
 */
export class EarlyFiringClock implements Clock {
  readonly #inner: ManualClock;
  readonly #earlyMs: number;

  constructor(inner: ManualClock, earlyMs = 1) {
    this.#inner = inner;
    this.#earlyMs = earlyMs;
  }

  now(): number {
    return this.#inner.now();
  }

  setTimer(callback: () => void, delayMs: number): () => void {
    return this.#inner.setTimer(callback, Math.max(0, delayMs - this.#earlyMs));
  }
}
