import { createMetricsRegistry, Elections, type Logger, RedisTtlStore, silentLogger } from '@polyvision/shared';
import type { Redis } from 'ioredis';
import {
  AdaptiveCapacityMonitor,
  blindCandidates,
  CapacityCache,
  type CapacityMonitorSettings,
  type StorageElementConfig,
} from '../../capacity/index.ts';
import type { CapacityView } from '../../ingest/placement.ts';

/**
 * The capacity view of a worker's placement: ingest's
 * {@link AdaptiveCapacityMonitor} as a follower (constructed, never started:
 * it never campaigns or polls on its schedule; it reads `capacity:{se_id}`
 * from the shared Redis cache, marks an SE full after a 507 and makes the
 * lazy refresh under the cross-replica lock, exactly as an ingest follower).
 *
 * Without Redis, or while the cache holds no entry for any configured SE (no
 * capacity monitor runs yet) or cannot be read, placement falls back to
 * {@link blindCandidates}: the SEs' reservations still refuse what does not fit.
 *
 * @param keyPrefix - `REDIS_KEY_PREFIX`, the same as ingest's.
 */
export function workerCapacityView(options: {
  redis: Redis | null | undefined;
  keyPrefix: string;
  storageElements: readonly StorageElementConfig[];
  settings: CapacityMonitorSettings;
  instanceId: string;
  logger?: Logger;
}): CapacityView {
  const { storageElements } = options;
  const logger = options.logger ?? silentLogger;
  if (!options.redis) {
    return {
      candidates: async () => blindCandidates(storageElements),
      triggerLazyUpdate: async () => undefined,
      noteReservation: async () => undefined,
    };
  }
  const store = new RedisTtlStore(options.redis, { keyPrefix: options.keyPrefix });
  const monitor = new AdaptiveCapacityMonitor({
    instanceId: options.instanceId,
    storageElements,
    settings: options.settings,
    elections: new Elections(store, { logger }),
    store,
    cache: new CapacityCache(options.redis, options.keyPrefix),
    registry: createMetricsRegistry({ service: 'worker' }),
    logger,
  });
  let warned = false;
  return {
    async candidates() {
      try {
        const cached = await monitor.candidates();
        if (cached.length > 0) return cached;
      } catch (error) {
        if (!warned) logger.warn({ err: error }, 'capacity cache unreadable: placing blind (SE reservations decide)');
        warned = true;
      }
      return blindCandidates(storageElements);
    },
    triggerLazyUpdate: (storageId) => monitor.triggerLazyUpdate(storageId),
    noteReservation: (storageId, sizeBytes) => monitor.noteReservation(storageId, sizeBytes),
  };
}
