import type { TtlRecord, TtlStore } from '../../src/leadership/index.ts';

/**
 * Wraps a real TtlStore and can hold every call back, as a network partition
 * or a paused server would, then forward the held calls in order on
 * `resume()`. Used where the real server cannot be paused without stalling
 * other tests that share it (the benchmark pauses its own Redis for real).
 */
export class StallableStore implements TtlStore {
  readonly #inner: TtlStore;
  #gate: Promise<void> | undefined;
  #open: () => void = () => undefined;

  constructor(inner: TtlStore) {
    this.#inner = inner;
  }

  /** From now on, calls wait until `resume()`. */
  stall(): void {
    if (this.#gate) return;
    this.#gate = new Promise((resolve) => {
      this.#open = resolve;
    });
  }

  /** Lets the held calls (and new ones) through. */
  resume(): void {
    this.#gate = undefined;
    this.#open();
  }

  async #through<T>(call: () => Promise<T>): Promise<T> {
    if (this.#gate) await this.#gate;
    return call();
  }

  insertIfNotExists(key: string, value: string, ttlMs: number): Promise<number | null> {
    return this.#through(() => this.#inner.insertIfNotExists(key, value, ttlMs));
  }

  compareAndSwap(key: string, expected: string, next: string, ttlMs: number): Promise<boolean> {
    return this.#through(() => this.#inner.compareAndSwap(key, expected, next, ttlMs));
  }

  compareAndDelete(key: string, expected: string): Promise<boolean> {
    return this.#through(() => this.#inner.compareAndDelete(key, expected));
  }

  get(key: string): Promise<TtlRecord | null> {
    return this.#through(() => this.#inner.get(key));
  }
}
