import { type Logger, silentLogger, type TtlStore } from '@polyvision/shared';
import type { Redis } from 'ioredis';
import type { CapacityCache } from '../capacity/capacity-cache.ts';
import type { CapacityMonitorSettings } from '../capacity/options.ts';
import type { StorageElementConfig } from '../capacity/storage-elements.ts';
import type { Database } from '../db/index.ts';
import { assembleCapacityMap, type CapacityMap } from './capacity-map.ts';
import { readJobsSummary } from './jobs-summary.ts';
import { OpsStore } from './ops-store.ts';
import type { OpsSettings } from './options.ts';

/** Options of {@link OpsMap}. */
export interface OpsMapOptions {
  /** This replica (`INGEST_INSTANCE_ID`). */
  instanceId: string;
  storageElements: readonly StorageElementConfig[];
  capacitySettings: CapacityMonitorSettings;
  settings: OpsSettings;
  redis: Redis;
  /** The ingest `REDIS_KEY_PREFIX`. */
  keyPrefix: string;
  cache: CapacityCache;
  /** The TtlStore holding the capacity-monitor leader key. */
  leaderStore: TtlStore;
  /** The leader key in that store (`capacity_monitor:leader_lock`). */
  leaderKey: string;
  /** This replica's capacity-monitor role, for its presence record. */
  role: () => 'leader' | 'follower' | 'disabled';
  /** The orchestrator's database (jobs panel); without it the panel says so. */
  db?: Database;
  logger?: Logger;
}

/** Receives each new map. */
export type CapacityMapListener = (map: CapacityMap) => void;

/** How many recent events the map carries. */
const EVENTS_SHOWN = 40;

/**
 * The live capacity map of one ingest replica. Every `refreshIntervalMs` it
 * reads the fleet state (capacity cache, health keys, leader record, 507
 * counts, replicas, events, jobs), records the transitions it sees as events
 * (each recorded once across replicas, see {@link OpsStore}), announces this
 * replica, and hands the map to its listeners (the SSE streams) when
 * something other than the clock changed. Stop with {@link close}.
 */
export class OpsMap {
  readonly #o: OpsMapOptions;
  readonly #store: OpsStore;
  readonly #logger: Logger;
  readonly #listeners = new Set<CapacityMapListener>();
  readonly #startedAt = new Date().toISOString();
  #timer: NodeJS.Timeout | undefined;
  #ticking: Promise<void> | undefined;
  #closed = false;
  #lastFingerprint: string | undefined;
  #lastLeaderTerm: number | undefined;
  /** Terms this replica saw first (it records their event). */
  readonly #newLeaderTerms = new Set<number>();

  constructor(options: OpsMapOptions) {
    this.#o = options;
    this.#logger = options.logger ?? silentLogger;
    this.#store = new OpsStore(options.redis, options.keyPrefix, options.settings.eventsMax);
  }

  #lastGood: CapacityMap | null = null;
  #unreachable: { sinceMs: number; message: string } | null = null;

  /** The shared Redis side (events, 507 counts, presence). */
  get store(): OpsStore {
    return this.#store;
  }

  /** Starts the refresh loop (idempotent). */
  start(): void {
    if (this.#timer || this.#closed) return;
    const tick = () => {
      this.#ticking = this.refresh()
        .then(() => undefined)
        .catch((error) => this.#logger.warn({ err: error }, 'ops map refresh failed'))
        .finally(() => {
          if (!this.#closed) this.#timer = setTimeout(tick, this.#o.settings.refreshIntervalMs);
        });
    };
    this.#timer = setTimeout(tick, 0);
  }

  /** Stops the loop, withdraws this replica's presence. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#timer);
    await this.#ticking;
    this.#listeners.clear();
    await this.#store.withdraw(this.#o.instanceId).catch(() => undefined);
  }

  /** Calls `listener` with every changed map; returns the unsubscribe function. */
  subscribe(listener: CapacityMapListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * A 507 from `storageId` during placement (ingest's `onPlacement`): counted
   * for "507s in the last hour", and recorded with the lazy update that
   * placement triggers for it (core/src/ingest/placement.ts).
   */
  async noteInsufficientStorage(storageId: string, message: string): Promise<void> {
    await this.#store.note507(storageId);
    await this.#store.record({
      type: 'insufficient_storage',
      storage_id: storageId,
      instance_id: this.#o.instanceId,
      message: `507 from ${storageId}: ${message}`.slice(0, 300),
    });
    await this.#store.record({
      type: 'lazy_update',
      storage_id: storageId,
      instance_id: this.#o.instanceId,
      message: `lazy update of ${storageId} after its 507`,
    });
  }

  /** Reads the fleet now, records transitions, announces this replica, notifies listeners on change. */
  async refresh(): Promise<CapacityMap> {
    // The jobs query runs only while someone watches (an SSE client); transitions are recorded always.
    const map = await this.read({ includeJobs: this.#listeners.size > 0 });
    await this.#recordTransitions(map).catch((error) => this.#logger.warn({ err: error }, 'ops events'));
    const fingerprint = JSON.stringify({
      ...map,
      generated_at: 0,
      leader: map.leader ? { ...map.leader, lease_remaining_ms: 0 } : null,
      instances: map.instances.map((i) => ({ ...i, last_seen_at: 0 })),
      storage_elements: map.storage_elements.map((se) => ({ ...se, last_poll_age_ms: 0 })),
    });
    const changed = this.#lastFingerprint !== fingerprint;
    this.#lastFingerprint = fingerprint;
    if (changed) {
      for (const listener of this.#listeners) {
        try {
          listener(map);
        } catch (error) {
          this.#logger.warn({ err: error }, 'ops map listener failed');
        }
      }
    }
    return map;
  }

  /**
   * Reads the whole map from Redis (and the database for jobs unless
   * `includeJobs` is false), announcing this replica first so that it lists itself.
   * When Redis cannot be read within 2 s, answers the last map read (or an
   * empty one) with `redis.reachable: false`, since when, and why; never throws.
   */
  async read(options: { includeJobs?: boolean } = {}): Promise<CapacityMap> {
    try {
      const map = await withTimeout(this.#readLive(options), READ_TIMEOUT_MS);
      if (this.#unreachable) this.#logger.info('ops map: Redis readable again');
      this.#unreachable = null;
      this.#lastGood = map;
      return map;
    } catch (error) {
      const message = `Redis unreachable: ${error instanceof Error ? error.message : String(error)}`.slice(0, 300);
      if (!this.#unreachable)
        this.#logger.warn({ err: error }, 'ops map: Redis unreachable, serving the last map read');
      this.#unreachable ??= { sinceMs: Date.now(), message };
      const o = this.#o;
      const nowMs = Date.now();
      const base =
        this.#lastGood ??
        assembleCapacityMap({
          nowMs,
          servedBy: o.instanceId,
          monitorEnabled: o.capacitySettings.enabled,
          pollBaseIntervalMs: o.capacitySettings.baseIntervalMs,
          pollMaxIntervalMs: o.capacitySettings.maxIntervalMs,
          warningPercent: o.settings.warningPercent,
          storageElements: o.storageElements,
          cache: new Map(),
          healthKeys: new Map(),
          count507: new Map(),
          leader: null,
          instances: [],
          events: [],
          jobs: { error: 'jobs are not read while Redis is unreachable' },
        });
      return {
        ...base,
        generated_at: new Date(nowMs).toISOString(),
        redis: {
          reachable: false,
          since: new Date(this.#unreachable.sinceMs).toISOString(),
          as_of: this.#lastGood?.generated_at ?? null,
          message: this.#unreachable.message,
        },
      };
    }
  }

  /** Reads everything from Redis (and the jobs from the database) now. */
  async #readLive(options: { includeJobs?: boolean }): Promise<CapacityMap> {
    const includeJobs = options.includeJobs ?? true;
    const o = this.#o;
    const nowMs = Date.now();
    const ids = o.storageElements.map((se) => se.storage_id);
    const presenceTtlMs = Math.max(3 * o.settings.refreshIntervalMs, 3_000);
    await this.#store.announce(
      {
        instance_id: o.instanceId,
        role: o.role(),
        started_at: this.#startedAt,
        last_seen_at: new Date(nowMs).toISOString(),
      },
      presenceTtlMs,
    );
    const [cache, healthValues, count507, record, instances, events, jobs] = await Promise.all([
      o.cache.readMany(ids),
      Promise.all(ids.map((id) => o.cache.readHealth(id))),
      this.#store.count507(ids, nowMs),
      o.leaderStore.get(o.leaderKey),
      this.#store.instances(presenceTtlMs, nowMs),
      this.#store.recent(EVENTS_SHOWN),
      !includeJobs
        ? Promise.resolve({ error: 'jobs are read while the map is watched' })
        : o.db
          ? readJobsSummary(o.db, o.settings.latestJobs).catch((error: unknown) => ({
              error: `jobs unavailable: ${error instanceof Error ? error.message : String(error)}`,
            }))
          : Promise.resolve({ error: 'no job database configured' }),
    ]);
    let leader: CapacityMap['leader'] = null;
    if (record) {
      const { since, first } = await this.#store.leaderSince(record.term);
      if (first) this.#newLeaderTerms.add(record.term);
      leader = { instance_id: record.value, term: record.term, since, lease_remaining_ms: record.ttlMs };
    }
    return assembleCapacityMap({
      nowMs,
      servedBy: o.instanceId,
      monitorEnabled: o.capacitySettings.enabled,
      pollBaseIntervalMs: o.capacitySettings.baseIntervalMs,
      pollMaxIntervalMs: o.capacitySettings.maxIntervalMs,
      warningPercent: o.settings.warningPercent,
      storageElements: o.storageElements,
      cache,
      healthKeys: new Map(ids.map((id, i) => [id, healthValues[i] ?? null])),
      count507,
      leader,
      instances,
      events,
      jobs,
    });
  }

  async #recordTransitions(map: CapacityMap): Promise<void> {
    const store = this.#store;
    if (map.leader) {
      if (this.#newLeaderTerms.delete(map.leader.term)) {
        await store.record({
          type: 'leader_changed',
          instance_id: map.leader.instance_id,
          message: `${map.leader.instance_id} leads the capacity monitor (term ${map.leader.term})`,
        });
      }
      this.#lastLeaderTerm = map.leader.term;
    } else if (map.monitor_enabled && this.#lastLeaderTerm !== undefined) {
      if (await store.firstToSeeVacancy(this.#lastLeaderTerm)) {
        await store.record({
          type: 'leader_vacant',
          message: `no capacity-monitor leader (term ${this.#lastLeaderTerm} ended)`,
        });
      }
    }
    for (const se of map.storage_elements) {
      const state = se.health;
      if (state === 'unknown') continue;
      const previous = await store.swapHealth(se.storage_id, state);
      if (previous === null || previous === '') continue;
      await store.record({
        type:
          state === 'unhealthy' ? 'storage_unhealthy' : state === 'degraded' ? 'storage_degraded' : 'storage_healthy',
        storage_id: se.storage_id,
        message:
          `${se.storage_id}: ${previous} → ${state}${se.health_detail && state !== 'healthy' ? ` (${se.health_detail})` : ''}`.slice(
            0,
            300,
          ),
      });
    }
  }
}

/** Longest wait for Redis before the map says it is unreachable, ms. */
const READ_TIMEOUT_MS = 2_000;

function withTimeout<T>(promise: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    }),
  ]).finally(() => clearTimeout(timer));
}
