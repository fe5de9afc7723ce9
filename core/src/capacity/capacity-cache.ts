import type { CapacityReport, StorageHealth, StorageMode } from '@polyvision/shared';
import type { Redis } from 'ioredis';

/**
 * One SE's capacity as the cache holds it: the SE's report plus what the
 * monitor knows (seed capacity-management-migration-plan.md, "Redis Cache
 * Structure": `capacity:{se_id}` with `last_poll`), stamped with the term
 * (fencing token) of the leader that wrote it.
 */
export interface CachedCapacity {
  storage_id: string;
  mode: StorageMode;
  total: number;
  used: number;
  available: number;
  reserved: number;
  percent_used: number;
  health: StorageHealth;
  backend: CapacityReport['backend'];
  location: string;
  endpoint: string;
  /** The SE's own timestamp of the report (ISO 8601). */
  last_update: string;
  /** When the monitor last heard from the SE successfully (ISO 8601). */
  last_poll: string;
  /** Leader term that wrote the entry; a lower term never overwrites a higher one. */
  term: number;
  /** False once `CAPACITY_MONITOR_FAILURE_THRESHOLD` polls in a row failed. */
  reachable: boolean;
  /** Set (ISO 8601) when a 507 marked the SE full, until the next successful poll. */
  full_marked_at: string | null;
  /**
   * Failed polls in a row when the entry was written (0 after a success), so
   * that a new leader resumes the count (poll-state.ts `seededPollState`).
   * Absent in entries written before it existed.
   */
  consecutive_failures?: number;
}

/**
 * Writes the entry only if the stored one carries no higher term.
 * KEYS[1] capacity:{se_id} (hash); KEYS[2] health:{se_id} (string).
 * ARGV[1] term; ARGV[2] capacity TTL ms; ARGV[3] health value; ARGV[4] health TTL ms;
 * ARGV[5..] field, value pairs.
 * Returns 1 when written, 0 when a higher term holds the key.
 */
const WRITE_ENTRY = `
local stored = redis.call('HGET', KEYS[1], 'term')
if stored and tonumber(stored) > tonumber(ARGV[1]) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 5))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4])
return 1
`;

/**
 * Marks an SE full after a 507, keeping the entry's term and TTL.
 * KEYS[1] capacity:{se_id}. ARGV[1] ISO time. Returns 1 when an entry was marked, 0 when none exists.
 */
const MARK_FULL = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'available', '0', 'full_marked_at', ARGV[1])
return 1
`;

/**
 * Lowers `available` by a reservation just placed through this ingest, so
 * the next placement sees it before the next poll. KEYS[1] capacity:{se_id}.
 * ARGV[1] bytes. Returns the new available, or -1 when no entry exists.
 */
const CONSUME = `
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local available = tonumber(redis.call('HGET', KEYS[1], 'available')) - tonumber(ARGV[1])
if available < 0 then available = 0 end
redis.call('HSET', KEYS[1], 'available', string.format('%d', available))
return available
`;

const NUMBER_FIELDS = ['total', 'used', 'available', 'reserved', 'percent_used', 'term'] as const;

/**
 * The shared capacity cache in Redis: `capacity:{se_id}` (a hash, TTL
 * `CAPACITY_MONITOR_CACHE_TTL`) and `health:{se_id}` (`healthy` or
 * `unhealthy: <reason>`, TTL `CAPACITY_MONITOR_HEALTH_TTL`). The leader
 * writes, everyone reads.
 */
export class CapacityCache {
  readonly #redis: Redis;
  readonly #prefix: string;

  /** @param keyPrefix - prepended to every key (tests use a random one). */
  constructor(redis: Redis, keyPrefix = '') {
    this.#redis = redis;
    this.#prefix = keyPrefix;
  }

  capacityKey(storageId: string): string {
    return `${this.#prefix}capacity:${storageId}`;
  }

  healthKey(storageId: string): string {
    return `${this.#prefix}health:${storageId}`;
  }

  /**
   * Writes an entry and its health key, fenced by `entry.term`.
   * @returns false when a newer leader's entry is there (nothing written).
   */
  async write(
    entry: CachedCapacity,
    health: string,
    ttl: { cacheTtlMs: number; healthTtlMs: number },
  ): Promise<boolean> {
    const fields: string[] = [];
    for (const [key, value] of Object.entries(entry)) fields.push(key, value === null ? '' : String(value));
    const written = await this.#redis.eval(
      WRITE_ENTRY,
      2,
      this.capacityKey(entry.storage_id),
      this.healthKey(entry.storage_id),
      String(entry.term),
      String(ttl.cacheTtlMs),
      health,
      String(ttl.healthTtlMs),
      ...fields,
    );
    return written === 1;
  }

  /** Writes only `health:{se_id}` (a failed poll with no report to keep). */
  async writeHealth(storageId: string, health: string, healthTtlMs: number): Promise<void> {
    await this.#redis.set(this.healthKey(storageId), health, 'PX', healthTtlMs);
  }

  /** Sets `available` to 0 and `full_marked_at`; false when the SE has no entry. */
  async markFull(storageId: string, at = new Date()): Promise<boolean> {
    return (await this.#redis.eval(MARK_FULL, 1, this.capacityKey(storageId), at.toISOString())) === 1;
  }

  /** Subtracts `sizeBytes` from the cached `available` (a reservation just placed). */
  async consume(storageId: string, sizeBytes: number): Promise<void> {
    await this.#redis.eval(CONSUME, 1, this.capacityKey(storageId), String(sizeBytes));
  }

  /** Reads the entries of `storageIds` (one round trip); absent ones are left out. */
  async readMany(storageIds: readonly string[]): Promise<Map<string, CachedCapacity>> {
    const out = new Map<string, CachedCapacity>();
    if (storageIds.length === 0) return out;
    const pipeline = this.#redis.pipeline();
    for (const id of storageIds) pipeline.hgetall(this.capacityKey(id));
    const results = (await pipeline.exec()) ?? [];
    storageIds.forEach((id, i) => {
      const [error, hash] = results[i] ?? [null, null];
      if (error || !hash || Object.keys(hash as object).length === 0) return;
      const entry = decode(hash as Record<string, string>);
      if (entry) out.set(id, entry);
    });
    return out;
  }

  /** Reads `health:{se_id}` of `storageIds` (one round trip); absent keys are left out. */
  async readHealthMany(storageIds: readonly string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (storageIds.length === 0) return out;
    const pipeline = this.#redis.pipeline();
    for (const id of storageIds) pipeline.get(this.healthKey(id));
    const results = (await pipeline.exec()) ?? [];
    storageIds.forEach((id, i) => {
      const [error, value] = results[i] ?? [null, null];
      if (error) throw error;
      if (typeof value === 'string') out.set(id, value);
    });
    return out;
  }

  /** Reads `health:{se_id}`. */
  async readHealth(storageId: string): Promise<string | null> {
    return this.#redis.get(this.healthKey(storageId));
  }

  /**
   * A short lock (`SET NX PX`) so that a burst of 507s for one SE makes one
   * lazy poll across all replicas. Returns a release function, or null when
   * someone else holds it.
   */
  async tryLock(name: string, holder: string, ttlMs: number): Promise<(() => Promise<void>) | null> {
    const key = `${this.#prefix}capacity_monitor:lazy:${name}`;
    const ok = await this.#redis.set(key, holder, 'PX', ttlMs, 'NX');
    if (ok !== 'OK') return null;
    return async () => {
      await this.#redis.eval(
        `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`,
        1,
        key,
        holder,
      );
    };
  }
}

/** Parses a cache hash; null when a field is missing or malformed (treated as a miss). */
function decode(hash: Record<string, string>): CachedCapacity | null {
  const numbers: Record<string, number> = {};
  for (const field of NUMBER_FIELDS) {
    const value = Number(hash[field]);
    if (hash[field] === undefined || !Number.isFinite(value)) return null;
    numbers[field] = value;
  }
  if (!hash.storage_id || !hash.mode || !hash.health || !hash.location) return null;
  return {
    storage_id: hash.storage_id,
    mode: hash.mode as StorageMode,
    total: numbers.total ?? 0,
    used: numbers.used ?? 0,
    available: numbers.available ?? 0,
    reserved: numbers.reserved ?? 0,
    percent_used: numbers.percent_used ?? 0,
    health: hash.health as StorageHealth,
    backend: (hash.backend ?? 'local') as CapacityReport['backend'],
    location: hash.location,
    endpoint: hash.endpoint ?? '',
    last_update: hash.last_update ?? '',
    last_poll: hash.last_poll ?? '',
    term: numbers.term ?? 0,
    reachable: hash.reachable !== 'false',
    full_marked_at: hash.full_marked_at ? hash.full_marked_at : null,
    ...failuresField(hash.consecutive_failures),
  };
}

/** `consecutive_failures` when present and a count; nothing otherwise. */
function failuresField(value: string | undefined): Pick<CachedCapacity, 'consecutive_failures'> {
  const n = Number(value);
  return value !== undefined && value !== '' && Number.isInteger(n) && n >= 0 ? { consecutive_failures: n } : {};
}
