import { type Logger, silentLogger } from '@polyvision/shared';
import { blindCandidates, type StorageCandidate, type StorageElementConfig } from '../capacity/index.ts';
import type { CapacityView } from './placement.ts';

/** Options of {@link LastKnownCapacity}. */
export interface LastKnownCapacityOptions {
  /** The capacity cache reader (the monitor, over Redis). */
  source: CapacityView;
  /** Every configured SE (candidates when nothing was ever read). */
  storageElements: readonly StorageElementConfig[];
  /** Longest wait for the cache before the last known view is used, ms. @defaultValue 1_000 */
  readTimeoutMs?: number;
  /** Whether the cache's connection is up now (ioredis `status === 'ready'`); when false the last known view is used at once. @defaultValue always */
  sourceAvailable?: () => boolean;
  logger?: Logger;
}

/** Why and since when placement runs on the last known capacity. */
export interface CapacityDegradation {
  /** Epoch ms of the first failed read of this outage. */
  sinceMs: number;
  reason: string;
  /** Epoch ms of the snapshot in use, or null when none was ever read (every SE is a candidate). */
  snapshotAtMs: number | null;
}

/**
 * Placement's view of capacity that survives a Redis outage (issue 19 item
 * 5; the seed's "followers keep using the last known capacity"): every
 * successful cache read is kept in this process's memory; when the cache
 * cannot be read (error, or no answer within `readTimeoutMs`) the last
 * snapshot is used — lowered by the reservations this replica placed since —
 * and, with no snapshot at all, every configured SE is a candidate; so does
 * a cache that answers but is empty (Redis restarted or flushed, the
 * monitor not yet polled). It stays
 * safe because every placement reserves on the SE first: an SE that is in
 * fact full answers 507 and the next one is tried, exactly as with a stale cache.
 */
export class LastKnownCapacity implements CapacityView {
  readonly #o: Required<Omit<LastKnownCapacityOptions, 'logger'>> & { logger: Logger };
  #snapshot: { candidates: StorageCandidate[]; atMs: number } | null = null;
  #degraded: CapacityDegradation | null = null;

  constructor(options: LastKnownCapacityOptions) {
    this.#o = {
      readTimeoutMs: 1_000,
      sourceAvailable: () => true,
      ...options,
      logger: options.logger ?? silentLogger,
    };
  }

  /**
   * Null while the cache answers (as of the last read: a placement or {@link refresh}); else why
   * placement runs on the last known view.
   */
  get degraded(): CapacityDegradation | null {
    return this.#degraded;
  }

  /** The view placement falls back on, without reading the cache: the last snapshot, else every SE. */
  lastKnown(): StorageCandidate[] {
    return this.#snapshot ? this.#snapshot.candidates.map((c) => ({ ...c })) : blindCandidates(this.#o.storageElements);
  }

  /**
   * Ends a degradation that is over without waiting for the next placement:
   * while degraded, reads the cache once, as a placement would (an error, no
   * answer within `readTimeoutMs` or an empty cache keep the degradation).
   * `/health/ready` calls it so that it does not report an outage that ended
   * while no upload came in. A no-op (no read) while not degraded.
   *
   * @returns {@link degraded} after the read. Never throws.
   */
  async refresh(): Promise<CapacityDegradation | null> {
    if (this.#degraded) await this.candidates();
    return this.#degraded;
  }

  async candidates(): Promise<StorageCandidate[]> {
    try {
      if (!this.#o.sourceAvailable()) throw new Error('the capacity cache is not connected');
      const candidates = await withTimeout(this.#o.source.candidates(), this.#o.readTimeoutMs);
      if (candidates.length === 0 && this.#o.storageElements.length > 0) {
        // An empty cache with SEs configured: Redis restarted or was flushed, and the monitor has not
        // polled yet. Until it has, the last known capacity stands (a single expired entry does not count).
        return this.lastKnown();
      }
      this.#snapshot = { candidates: candidates.map((c) => ({ ...c })), atMs: Date.now() };
      if (this.#degraded) {
        this.#o.logger.info({ outage_ms: Date.now() - this.#degraded.sinceMs }, 'capacity cache readable again');
        this.#degraded = null;
      }
      return candidates;
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      if (!this.#degraded) {
        this.#o.logger.warn(
          { err: error, snapshot_at: this.#snapshot ? new Date(this.#snapshot.atMs).toISOString() : null },
          'capacity cache unreadable: placing on the last known capacity (reservations on the SEs decide)',
        );
      }
      this.#degraded = {
        sinceMs: this.#degraded?.sinceMs ?? Date.now(),
        reason,
        snapshotAtMs: this.#snapshot?.atMs ?? null,
      };
      return this.#snapshot
        ? this.#snapshot.candidates.map((c) => ({ ...c }))
        : blindCandidates(this.#o.storageElements);
    }
  }

  /** Passes the 507 on to the monitor; a cache that cannot be written is only logged. */
  async triggerLazyUpdate(storageId: string): Promise<void> {
    if (!this.#o.sourceAvailable()) return;
    await withTimeout(this.#o.source.triggerLazyUpdate(storageId), this.#o.readTimeoutMs).catch(() => undefined);
  }

  /** Lowers the cached (and the remembered) space of `storageId` by `sizeBytes`. Never throws. */
  async noteReservation(storageId: string, sizeBytes: number): Promise<void> {
    const kept = this.#snapshot?.candidates.find((c) => c.storage_id === storageId);
    if (kept) kept.available = Math.max(0, kept.available - sizeBytes);
    if (!this.#o.sourceAvailable()) return;
    await withTimeout(this.#o.source.noteReservation(storageId, sizeBytes), this.#o.readTimeoutMs).catch(
      () => undefined,
    );
  }
}

function withTimeout<T>(promise: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    }),
  ]).finally(() => clearTimeout(timer));
}
