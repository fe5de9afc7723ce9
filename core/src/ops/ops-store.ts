import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';

/** Kinds of entries in the recent-events list. */
export type OpsEventType =
  | 'leader_changed'
  | 'leader_vacant'
  | 'insufficient_storage'
  | 'lazy_update'
  | 'storage_unhealthy'
  | 'storage_healthy'
  | 'storage_degraded';

/** One recent event, as the API shows it. */
export interface OpsEvent {
  /** Redis stream id (`<ms>-<seq>`): unique and ordered. */
  id: string;
  /** When it happened (ISO 8601). */
  at: string;
  type: OpsEventType;
  storage_id?: string;
  instance_id?: string;
  message: string;
}

/** An ingest replica as last announced (presence). */
export interface OpsInstance {
  instance_id: string;
  /** Its capacity-monitor role at its last announcement. */
  role: 'leader' | 'follower' | 'disabled';
  started_at: string;
  last_seen_at: string;
}

/**
 * Swaps the recorded health of an SE. KEYS[1] ops:se_health (hash).
 * ARGV[1] storage_id; ARGV[2] new state. Returns the previous state ('' when
 * none) if it changed, or false (nil) when it was already that state.
 */
const SWAP_HEALTH = `
local old = redis.call('HGET', KEYS[1], ARGV[1])
if old == ARGV[2] then return false end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if old then return old end
return ''
`;

const HOUR_MS = 3_600_000;

/**
 * What the ops map keeps in Redis beside the capacity cache, shared by every
 * ingest replica (keys under the ingest `REDIS_KEY_PREFIX`):
 * - `ops:events` — a stream of recent events (`XADD MAXLEN ~ eventsMax`);
 * - `ops:507:{se_id}` — a sorted set of 507 times (ms), trimmed to the last hour;
 * - `ops:leader_since:{term}` — when a term was first seen (`SET NX`, 1 day);
 *   its `SET NX` also elects the one replica that records the change event;
 * - `ops:se_health` — the last health state per SE, swapped atomically so
 *   that a transition is recorded once across replicas;
 * - `ops:instances` (sorted set by last-seen ms) and `ops:instance:{id}`
 *   (JSON, with a TTL) — replica presence, for the followers list.
 */
export class OpsStore {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #eventsMax: number;

  /**
   * @param keyPrefix - the ingest `REDIS_KEY_PREFIX` (tests use a random one).
   * @param eventsMax - approximate length of the events stream.
   */
  constructor(redis: Redis, keyPrefix: string, eventsMax: number) {
    this.#redis = redis;
    this.#prefix = keyPrefix;
    this.#eventsMax = eventsMax;
  }

  /** Appends an event. */
  async record(event: Omit<OpsEvent, 'id' | 'at'>, at = new Date()): Promise<void> {
    const fields: string[] = ['at', at.toISOString(), 'type', event.type, 'message', event.message];
    if (event.storage_id) fields.push('storage_id', event.storage_id);
    if (event.instance_id) fields.push('instance_id', event.instance_id);
    await this.#redis.xadd(this.#key('ops:events'), 'MAXLEN', '~', String(this.#eventsMax), '*', ...fields);
  }

  /** The newest `count` events, newest first. */
  async recent(count: number): Promise<OpsEvent[]> {
    const rows = await this.#redis.xrevrange(this.#key('ops:events'), '+', '-', 'COUNT', count);
    return rows.map(([id, flat]) => {
      const f: Record<string, string> = {};
      for (let i = 0; i + 1 < flat.length; i += 2) f[flat[i] as string] = flat[i + 1] as string;
      return {
        id,
        at: f.at ?? new Date(Number(id.split('-')[0])).toISOString(),
        type: (f.type ?? 'lazy_update') as OpsEventType,
        message: f.message ?? '',
        ...(f.storage_id ? { storage_id: f.storage_id } : {}),
        ...(f.instance_id ? { instance_id: f.instance_id } : {}),
      };
    });
  }

  /** Counts a 507 from an SE (for "507s in the last hour"). */
  async note507(storageId: string, nowMs = Date.now()): Promise<void> {
    const key = this.#key(`ops:507:${storageId}`);
    await this.#redis
      .multi()
      .zadd(key, nowMs, `${nowMs}:${randomBytes(4).toString('hex')}`)
      .zremrangebyscore(key, '-inf', nowMs - HOUR_MS)
      .pexpire(key, HOUR_MS)
      .exec();
  }

  /** 507s per SE in the hour before `nowMs` (one round trip). */
  async count507(storageIds: readonly string[], nowMs = Date.now()): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    if (storageIds.length === 0) return out;
    const pipeline = this.#redis.pipeline();
    for (const id of storageIds) pipeline.zcount(this.#key(`ops:507:${id}`), nowMs - HOUR_MS, '+inf');
    const results = (await pipeline.exec()) ?? [];
    storageIds.forEach((id, i) => {
      out.set(id, Number(results[i]?.[1] ?? 0));
    });
    return out;
  }

  /**
   * Notes that `term` was seen. The first caller for a term stores `nowIso`.
   * @returns when the term was first seen, and whether this call was the first.
   */
  async leaderSince(term: number, nowIso = new Date().toISOString()): Promise<{ since: string; first: boolean }> {
    const key = this.#key(`ops:leader_since:${term}`);
    const set = await this.#redis.set(key, nowIso, 'EX', 86_400, 'NX');
    if (set === 'OK') return { since: nowIso, first: true };
    return { since: (await this.#redis.get(key)) ?? nowIso, first: false };
  }

  /** True for the first caller that reports the leader key vacant after `lastTerm` (dedupes the event). */
  async firstToSeeVacancy(lastTerm: number): Promise<boolean> {
    const set = await this.#redis.set(this.#key(`ops:leader_vacant:${lastTerm}`), '1', 'EX', 86_400, 'NX');
    return set === 'OK';
  }

  /**
   * Records an SE's health state.
   * @returns the previous state if this call changed it ('' when none was recorded), or null.
   */
  async swapHealth(storageId: string, state: string): Promise<string | null> {
    const old = await this.#redis.eval(SWAP_HEALTH, 1, this.#key('ops:se_health'), storageId, state);
    return typeof old === 'string' ? old : null;
  }

  /** Announces this replica for `ttlMs`. */
  async announce(instance: OpsInstance, ttlMs: number): Promise<void> {
    const nowMs = Date.parse(instance.last_seen_at);
    await this.#redis
      .multi()
      .zadd(this.#key('ops:instances'), nowMs, instance.instance_id)
      .zremrangebyscore(this.#key('ops:instances'), '-inf', nowMs - HOUR_MS)
      .set(this.#key(`ops:instance:${instance.instance_id}`), JSON.stringify(instance), 'PX', ttlMs)
      .exec();
  }

  /** Removes this replica's announcement (on close). */
  async withdraw(instanceId: string): Promise<void> {
    await this.#redis
      .multi()
      .zrem(this.#key('ops:instances'), instanceId)
      .del(this.#key(`ops:instance:${instanceId}`))
      .exec();
  }

  /** Replicas announced within `withinMs` before `nowMs` whose announcement has not expired. */
  async instances(withinMs: number, nowMs = Date.now()): Promise<OpsInstance[]> {
    const ids = await this.#redis.zrangebyscore(this.#key('ops:instances'), nowMs - withinMs, '+inf');
    if (ids.length === 0) return [];
    const values = await this.#redis.mget(ids.map((id) => this.#key(`ops:instance:${id}`)));
    const out: OpsInstance[] = [];
    for (const value of values) {
      if (!value) continue;
      try {
        out.push(JSON.parse(value) as OpsInstance);
      } catch {
        // a foreign or corrupt value: not a replica we can show
      }
    }
    return out.sort((a, b) => a.instance_id.localeCompare(b.instance_id));
  }

  #key(name: string): string {
    return `${this.#prefix}${name}`;
  }
}
