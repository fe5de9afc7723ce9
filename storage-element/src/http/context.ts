import type { HttpBindings } from '@hono/node-server';
import type { Logger } from '@polyvision/shared';
import type { BlobBackend } from '../backends/blob-backend.ts';
import type { CapacityService } from '../capacity/capacity-service.ts';
import type { StorageElementConfig } from '../config.ts';
import type { ReservationLedger } from '../reservations/ledger.ts';
import type { UploadStore } from '../uploads/upload-store.ts';
import type { SeMetrics } from './metrics.ts';

/** What the routes call: services that know nothing of HTTP. */
export interface SeServices {
  config: StorageElementConfig;
  backend: BlobBackend;
  ledger: ReservationLedger;
  uploads: UploadStore;
  capacity: CapacityService;
  metrics: SeMetrics;
  logger: Logger;
}

/** Hono environment of the SE app: Node bindings (`incoming`, `outgoing`) when served by @hono/node-server. */
export type SeEnv = { Bindings: Partial<HttpBindings> };
