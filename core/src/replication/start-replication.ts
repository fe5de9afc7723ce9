import { type Logger, type Registry, silentLogger, type TtlStore } from '@polyvision/shared';
import type { StorageElementConfig } from '../capacity/index.ts';
import type { Database } from '../db/index.ts';
import type { CapacityView, PlacementOptions } from '../ingest/placement.ts';
import type { StorageElementClient } from '../ingest/se-client.ts';
import type { UploadCopies } from '../ingest/tus-responses.ts';
import { countUnderReplicated, countVerified } from './copies.ts';
import { type ReplicationSettings, type RequiredCopies, requiredCopies } from './options.ts';
import { Repairer } from './repairer.ts';
import { startRepairerLeadership } from './repairer-leadership.ts';
import { Replicator } from './replicator.ts';

/** What {@link startReplication} needs (ingest's own pieces). */
export interface ReplicationServiceOptions {
  settings: ReplicationSettings;
  db: Database;
  client: StorageElementClient;
  capacity: CapacityView;
  storageElements: readonly StorageElementConfig[];
  placement: PlacementOptions;
  /** Where the repairer's leader is elected. */
  store: TtlStore;
  instanceId: string;
  registry?: Registry;
  logger?: Logger;
}

/** Replication as ingest runs it. */
export interface RunningReplication {
  fleet: RequiredCopies;
  replicator: Replicator;
  repairer: Repairer;
  /** For the tus confirmation (tus-responses.ts). */
  copies: UploadCopies;
  /** After an upload is catalogued: makes its copies, waiting at most `REPLICATION_CONFIRM_WAIT_MS`. */
  afterUpload(fileId: string): Promise<void>;
  /** Catalogued files short of copies now (copies on lost SEs not counted). */
  underReplicated(): Promise<number>;
  /** Stops the repairer (releasing leadership) and the copies in progress. */
  close(): Promise<void>;
}

/**
 * Starts replication in an ingest replica: the {@link Replicator} (copies
 * after each upload), the {@link Repairer} under leadership (one among the
 * replicas), and what the tus confirmation and readiness read.
 */
export function startReplication(o: ReplicationServiceOptions): RunningReplication {
  const logger = o.logger ?? silentLogger;
  const fleet = requiredCopies(o.storageElements, o.settings.factor);
  if (fleet.degraded) {
    logger.warn(
      { factor: fleet.factor, datacenters: fleet.datacenters, required: fleet.required },
      'REPLICATION_FACTOR is more than the datacenters configured: files keep fewer copies (readiness says degraded)',
    );
  }
  const replicator = new Replicator(
    {
      db: o.db,
      client: o.client,
      capacity: o.capacity,
      storageElements: o.storageElements,
      placement: o.placement,
      logger,
    },
    fleet.required,
  );
  const repairer = new Repairer({
    db: o.db,
    client: o.client,
    storageElements: o.storageElements,
    capacity: o.capacity,
    replicator,
    settings: o.settings,
    ...(o.registry ? { registry: o.registry } : {}),
    logger,
  });
  const leadership = startRepairerLeadership({
    repairer,
    store: o.store,
    instanceId: o.instanceId,
    leaseMs: o.settings.leaderLeaseMs,
    scanIntervalMs: o.settings.scanIntervalMs,
    auditIntervalMs: o.settings.auditIntervalMs,
    logger,
  });
  return {
    fleet,
    replicator,
    repairer,
    copies: {
      required: fleet.required,
      verified: (fileId) => countVerified(o.db, fileId),
      kick: (fileId) => void replicator.ensure(fileId).catch(() => undefined),
    },
    async afterUpload(fileId) {
      if (fleet.required <= 1) return;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        replicator.ensure(fileId),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, o.settings.confirmWaitMs);
        }),
      ]).finally(() => clearTimeout(timer));
    },
    underReplicated: () => countUnderReplicated(o.db, fleet.required, repairer.lostStorageIds()),
    async close() {
      await leadership.stop();
      await replicator.close();
    },
  };
}
