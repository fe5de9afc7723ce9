import { PolyvisionError } from '@polyvision/shared';
import {
  type RejectionReasons,
  type StorageCandidate,
  type StorageElementConfig,
  selectStorage,
} from '../capacity/index.ts';
import { InsufficientStorageError } from './se-client.ts';

/** What placement needs from the capacity monitor. */
export interface CapacityView {
  candidates(): Promise<StorageCandidate[]>;
  /** Marks the SE full and refreshes it; placement does not wait for it. */
  triggerLazyUpdate(storageId: string): Promise<void>;
  noteReservation(storageId: string, sizeBytes: number): Promise<void>;
}

/** What placement needs from the SE client. */
export interface Reserver {
  reserve(se: StorageElementConfig, sizeBytes: number, ttlMs: number): Promise<{ reservation_id: string }>;
}

/** Options of {@link placeFile}. */
export interface PlacementOptions {
  /** Reservation attempts before giving up (seed: 3). */
  maxAttempts: number;
  /** Bytes an SE must keep free beyond the file. */
  headroomBytes: number;
  /** Preferred datacenters, in order. */
  preferredLocations: readonly string[];
  /** Reservation lifetime asked of the SE, in ms. */
  reservationTtlMs: number;
  /** `Retry-After` of the final 507, in ms. */
  retryAfterMs: number;
  random?: () => number;
}

/** One try of a placement, for logs and the 507 body. */
export interface PlacementAttempt {
  storage_id: string;
  outcome: 'reserved' | 'insufficient_storage' | 'unreachable';
  message?: string;
}

/** Where a file goes. */
export interface Placement {
  se: StorageElementConfig;
  candidate: StorageCandidate;
  reservationId: string;
  attempts: PlacementAttempt[];
}

/**
 * Reserves room for `sizeBytes` on a storage element before any byte moves
 * (seed capacity-management-migration-plan.md, "Retry Logic with Lazy
 * Update"): select (selector.ts) → reserve; on `507` exclude that SE,
 * trigger the lazy update, select again; an unreachable SE is excluded the
 * same way. At most `maxAttempts` reservations.
 *
 * @throws PolyvisionError `insufficient_storage` (HTTP 507, not retriable by
 *   the server, `details.retry_after_ms` → `Retry-After`) with the attempts
 *   and the reasons each SE was not eligible.
 */
export async function placeFile(
  deps: { capacity: CapacityView; reserver: Reserver; storageElements: readonly StorageElementConfig[] },
  sizeBytes: number,
  options: PlacementOptions,
): Promise<Placement> {
  const excluded = new Set<string>();
  const attempts: PlacementAttempt[] = [];
  let rejected: RejectionReasons = {};
  for (let attempt = 0; attempt < options.maxAttempts; attempt++) {
    const candidates = await deps.capacity.candidates();
    const selection = selectStorage(candidates, {
      sizeBytes,
      headroomBytes: options.headroomBytes,
      excluded,
      preferredLocations: options.preferredLocations,
      ...(options.random ? { random: options.random } : {}),
    });
    rejected = selection.rejected;
    const candidate = selection.chosen;
    if (!candidate) break;
    const se = deps.storageElements.find((s) => s.storage_id === candidate.storage_id);
    if (!se) break;
    try {
      const reservation = await deps.reserver.reserve(se, sizeBytes, options.reservationTtlMs);
      attempts.push({ storage_id: se.storage_id, outcome: 'reserved' });
      await deps.capacity.noteReservation(se.storage_id, sizeBytes).catch(() => undefined);
      return { se, candidate, reservationId: reservation.reservation_id, attempts };
    } catch (error) {
      excluded.add(se.storage_id);
      if (error instanceof InsufficientStorageError) {
        attempts.push({ storage_id: se.storage_id, outcome: 'insufficient_storage', message: error.message });
        void deps.capacity.triggerLazyUpdate(se.storage_id);
      } else {
        attempts.push({
          storage_id: se.storage_id,
          outcome: 'unreachable',
          message: error instanceof Error ? error.message : String(error),
        });
      }
    }
  }
  const tried = attempts.length;
  throw new PolyvisionError(
    'insufficient_storage',
    tried === 0
      ? `no storage element can take ${sizeBytes} bytes now (none is writable, healthy and large enough)`
      : `no storage element took ${sizeBytes} bytes after ${tried} attempt(s)`,
    {
      httpStatus: 507,
      details: {
        requested: sizeBytes,
        attempts,
        not_eligible: rejected,
        retry_after_ms: options.retryAfterMs,
      },
    },
  );
}
