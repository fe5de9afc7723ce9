import { z } from 'zod';
import { isoDateTime, safeId, sizeBytes } from './safe-id.ts';

/** Storage element modes (seed capacity plan): writes only in `edit` and `rw`; deletes only in `edit`. */
export const storageModeSchema = z.enum(['edit', 'rw', 'ro', 'ar']);
export type StorageMode = z.infer<typeof storageModeSchema>;

/** Modes that accept writes. */
export const WRITABLE_STORAGE_MODES: readonly StorageMode[] = Object.freeze(['edit', 'rw']);

export const storageHealthSchema = z.enum(['healthy', 'degraded', 'unhealthy']);
export type StorageHealth = z.infer<typeof storageHealthSchema>;

export const storageBackendSchema = z.enum(['local', 's3']);
export type StorageBackend = z.infer<typeof storageBackendSchema>;

/**
 * `GET /api/v1/capacity` of a storage element (DESIGN.md, "Storage element";
 * seed capacity-management-migration-plan.md). Sizes are integer bytes;
 * `available` and `used` never exceed `total`; `percent_used` is 0–100.
 */
export const capacityReportSchema = z
  .object({
    storage_id: safeId,
    mode: storageModeSchema,
    total: sizeBytes,
    used: sizeBytes,
    available: sizeBytes,
    /** Bytes promised to open reservations. */
    reserved: sizeBytes,
    percent_used: z.number().min(0).max(100),
    health: storageHealthSchema,
    backend: storageBackendSchema,
    /** Datacenter name. */
    location: z.string().min(1).max(128),
    /** Base URL of the SE API. */
    endpoint: z.url(),
    last_update: isoDateTime,
  })
  .refine((r) => r.available <= r.total, { message: 'available must not exceed total', path: ['available'] })
  .refine((r) => r.used <= r.total, { message: 'used must not exceed total', path: ['used'] });

export type CapacityReport = z.infer<typeof capacityReportSchema>;
