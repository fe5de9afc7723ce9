import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { PolyvisionError } from '../errors/index.ts';
import { COMPARE_AND_DELETE, COMPARE_AND_SWAP, GET_RECORD, INSERT_IF_NOT_EXISTS } from './redis-scripts.ts';
import { assertKey, assertTtlMs, type TtlRecord, type TtlStore } from './ttl-store.ts';

/** Options of {@link RedisTtlStore}. */
export interface RedisTtlStoreOptions {
  /** Prepended to every key (tests use a random prefix). @defaultValue '' */
  keyPrefix?: string;
  /** Suffix of the per-key term counter key. @defaultValue ':term' */
  termSuffix?: string;
  /**
   * A dedicated ioredis connection for release notices (`client.duplicate()`;
   * it enters subscriber mode). With it, {@link RedisTtlStore.watchReleases}
   * subscribes to `<prefix><key>:released`, on which every successful
   * compareAndDelete publishes (whether or not this store has a subscriber).
   * Without it the store has no `watchReleases` and followers wait for their
   * retry interval. The caller owns and closes it.
   */
  subscriber?: RedisSubscriber;
}

/** The subset of an ioredis client in subscriber mode this driver uses. */
export type RedisSubscriber = Pick<Redis, 'subscribe' | 'unsubscribe' | 'on' | 'off'>;

/** The subset of an ioredis client this driver uses. */
export type RedisScriptClient = Pick<Redis, 'evalsha' | 'eval'>;

interface LoadedScript {
  readonly source: string;
  readonly sha1: string;
}

function load(source: string): LoadedScript {
  return { source, sha1: createHash('sha1').update(source).digest('hex') };
}

const scripts = {
  insert: load(INSERT_IF_NOT_EXISTS),
  swap: load(COMPARE_AND_SWAP),
  delete: load(COMPARE_AND_DELETE),
  get: load(GET_RECORD),
} as const;

/**
 * {@link TtlStore} on Redis through an ioredis client owned by the caller
 * (the store never connects or quits it). Each operation is one Lua script
 * (see `redis-scripts.ts`), sent with EVALSHA and falling back to EVAL once
 * when the server answers NOSCRIPT (after a restart or SCRIPT FLUSH).
 *
 * Expiry is Redis's own (`PX`), so the server's clock decides. Terms live in
 * `<key><termSuffix>` with no TTL: they survive store instances and process
 * restarts for as long as Redis keeps its data (and are lost with a
 * non-persistent Redis restart — a reason to prefer the PostgreSQL driver
 * where fencing across Redis restarts matters).
 */
export class RedisTtlStore implements TtlStore {
  readonly #client: RedisScriptClient;
  readonly #keyPrefix: string;
  readonly #termSuffix: string;
  readonly #subscriber: RedisSubscriber | undefined;
  readonly #watchers = new Map<string, Set<() => void>>();
  #listening = false;
  /** Present only with the `subscriber` option (see {@link RedisTtlStoreOptions.subscriber}). */
  readonly watchReleases?: (key: string, onRelease: () => void) => () => void;

  constructor(client: RedisScriptClient, options: RedisTtlStoreOptions = {}) {
    this.#client = client;
    this.#keyPrefix = options.keyPrefix ?? '';
    this.#termSuffix = options.termSuffix ?? ':term';
    if (this.#termSuffix.length === 0)
      throw new PolyvisionError('ttl_store_invalid_argument', 'termSuffix must not be empty');
    this.#subscriber = options.subscriber;
    if (this.#subscriber) this.watchReleases = (key, onRelease) => this.#watch(key, onRelease);
  }

  async insertIfNotExists(key: string, value: string, ttlMs: number): Promise<number | null> {
    assertKey(key);
    assertKey(value, 'value');
    assertTtlMs(ttlMs);
    const term = await this.#run(scripts.insert, [this.#key(key), this.#termKey(key)], [value, String(ttlMs)]);
    const n = Number(term);
    return n > 0 ? n : null;
  }

  async compareAndSwap(key: string, expected: string, next: string, ttlMs: number): Promise<boolean> {
    assertKey(key);
    assertKey(expected, 'expected');
    assertKey(next, 'next');
    assertTtlMs(ttlMs);
    return Number(await this.#run(scripts.swap, [this.#key(key)], [expected, next, String(ttlMs)])) === 1;
  }

  async compareAndDelete(key: string, expected: string): Promise<boolean> {
    assertKey(key);
    assertKey(expected, 'expected');
    return Number(await this.#run(scripts.delete, [this.#key(key)], [expected, this.#releaseChannel(key)])) === 1;
  }

  async get(key: string): Promise<TtlRecord | null> {
    assertKey(key);
    const reply = await this.#run(scripts.get, [this.#key(key), this.#termKey(key)], []);
    if (!Array.isArray(reply)) return null;
    const [value, pttl, term] = reply as [string, number, number];
    // PTTL answers -1 for a key without expiry (never written so by this driver).
    return { value: String(value), ttlMs: Math.max(0, Number(pttl)), term: Number(term) };
  }

  #releaseChannel(key: string): string {
    return `${this.#keyPrefix}${key}:released`;
  }

  #watch(key: string, onRelease: () => void): () => void {
    assertKey(key);
    const subscriber = this.#subscriber!;
    if (!this.#listening) {
      this.#listening = true;
      subscriber.on('message', (channel: string) => {
        for (const wake of this.#watchers.get(channel) ?? []) wake();
      });
    }
    const channel = this.#releaseChannel(key);
    let watchers = this.#watchers.get(channel);
    if (!watchers) {
      watchers = new Set();
      this.#watchers.set(channel, watchers);
      // Best effort: while (re)subscribing, followers still retry on their interval.
      subscriber.subscribe(channel).catch(() => undefined);
    }
    const watcher = () => onRelease();
    watchers.add(watcher);
    return () => {
      watchers.delete(watcher);
      if (watchers.size === 0 && this.#watchers.get(channel) === watchers) {
        this.#watchers.delete(channel);
        subscriber.unsubscribe(channel).catch(() => undefined);
      }
    };
  }

  #key(key: string): string {
    return this.#keyPrefix + key;
  }

  #termKey(key: string): string {
    return this.#keyPrefix + key + this.#termSuffix;
  }

  async #run(script: LoadedScript, keys: string[], args: string[]): Promise<unknown> {
    try {
      return await this.#client.evalsha(script.sha1, keys.length, ...keys, ...args);
    } catch (error) {
      if (error instanceof Error && error.message.startsWith('NOSCRIPT')) {
        return await this.#client.eval(script.source, keys.length, ...keys, ...args);
      }
      throw error;
    }
  }
}
