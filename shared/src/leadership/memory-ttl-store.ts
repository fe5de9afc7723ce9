import { type Clock, systemClock } from './clock.ts';
import { assertKey, assertTtlMs, type TtlRecord, type TtlStore } from './ttl-store.ts';

interface MemoryEntry {
  value: string;
  expiresAtMs: number;
  term: number;
}

/** Options of {@link MemoryTtlStore}. */
export interface MemoryTtlStoreOptions {
  /**
   * Where time comes from; inject a `ManualClock` in tests to expire records
   * without sleeping. @defaultValue systemClock
   */
  clock?: Clock;
}

/**
 * The embedded {@link TtlStore}: one process, no persistence (terms restart
 * at 1 with a new instance). Used by `pnpm demo` and by tests with a manual
 * clock. Every operation completes synchronously inside its promise, so the
 * operations are trivially atomic.
 */
export class MemoryTtlStore implements TtlStore {
  readonly #clock: Clock;
  readonly #entries = new Map<string, MemoryEntry>();
  /** Last term issued per key; never decreases, survives deletes. */
  readonly #terms = new Map<string, number>();
  readonly #watchers = new Map<string, Set<() => void>>();

  constructor(options: MemoryTtlStoreOptions = {}) {
    this.#clock = options.clock ?? systemClock;
  }

  async insertIfNotExists(key: string, value: string, ttlMs: number): Promise<number | null> {
    assertKey(key);
    assertKey(value, 'value');
    assertTtlMs(ttlMs);
    if (this.#live(key)) return null;
    const term = (this.#terms.get(key) ?? 0) + 1;
    this.#terms.set(key, term);
    this.#entries.set(key, { value, expiresAtMs: this.#clock.now() + ttlMs, term });
    return term;
  }

  async compareAndSwap(key: string, expected: string, next: string, ttlMs: number): Promise<boolean> {
    assertKey(key);
    assertKey(expected, 'expected');
    assertKey(next, 'next');
    assertTtlMs(ttlMs);
    const entry = this.#live(key);
    if (!entry || entry.value !== expected) return false;
    entry.value = next;
    entry.expiresAtMs = this.#clock.now() + ttlMs;
    return true;
  }

  async compareAndDelete(key: string, expected: string): Promise<boolean> {
    assertKey(key);
    assertKey(expected, 'expected');
    const entry = this.#live(key);
    if (!entry || entry.value !== expected) return false;
    this.#entries.delete(key);
    for (const onRelease of this.#watchers.get(key) ?? []) queueMicrotask(onRelease);
    return true;
  }

  watchReleases(key: string, onRelease: () => void): () => void {
    assertKey(key);
    const watchers = this.#watchers.get(key) ?? new Set();
    this.#watchers.set(key, watchers);
    const watcher = () => onRelease();
    watchers.add(watcher);
    return () => {
      watchers.delete(watcher);
      if (watchers.size === 0) this.#watchers.delete(key);
    };
  }

  async get(key: string): Promise<TtlRecord | null> {
    assertKey(key);
    const entry = this.#live(key);
    if (!entry) return null;
    return { value: entry.value, ttlMs: Math.max(0, entry.expiresAtMs - this.#clock.now()), term: entry.term };
  }

  /** The live entry for `key`, dropping it first if it has expired. */
  #live(key: string): MemoryEntry | undefined {
    const entry = this.#entries.get(key);
    if (entry && entry.expiresAtMs <= this.#clock.now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry;
  }
}
