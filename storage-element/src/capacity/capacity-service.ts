import { createHash } from 'node:crypto';
import type { CapacityReport, StorageHealth } from '@polyvision/shared';
import type { BackendProbe, BlobBackend } from '../backends/blob-backend.ts';
import type { StorageMode } from '../config.ts';
import type { ReservationLedger } from '../reservations/ledger.ts';

/** Options of {@link CapacityService}. */
export interface CapacityServiceOptions {
  storageId: string;
  location: string;
  /** Base URL reported as `endpoint` (read at each report). */
  endpoint: () => string;
  mode: StorageMode;
  backend: BlobBackend & { readonly storedBytes: number };
  ledger: ReservationLedger;
  /** Bytes in the staging area now. */
  stagedBytes: () => number;
  /** Headroom kept free, bytes (`STORAGE_RESERVED_BYTES`). */
  headroomBytes: number;
  /** Byte counts are rounded down to this before computing the ETag. @defaultValue 1 MiB */
  etagGranularityBytes?: number;
  /** How long one probe is reused, ms. @defaultValue 1_000 */
  probeMaxAgeMs?: number;
  /** How long a disk/backend I/O error keeps health `unhealthy`, ms. @defaultValue 60_000 */
  ioErrorWindowMs?: number;
  /** Free-inode ratio below which health is `degraded`. @defaultValue 0.05 */
  minFreeInodeRatio?: number;
  now?: () => number;
}

/** A capacity report and its entity tag. */
export interface CapacitySnapshot {
  report: CapacityReport;
  /**
   * Weak ETag (`W/"c-…"`, RFC 9110 §8.8.1) over every field but `last_update`,
   * with byte counts rounded down to `etagGranularityBytes`: reports that
   * differ by less than that are treated as equivalent, so pollers get `304`
   * while only the disk's background churn changes.
   */
  etag: string;
}

interface Probe {
  probe: BackendProbe | undefined;
  error: string | undefined;
  atMs: number;
  /** Bytes this SE held (stored + staged) when the probe started. */
  heldBytesAtProbe: number;
}

/**
 * Computes what the SE can still take (seed CapacityService, DESIGN.md
 * `CapacityReport`).
 *
 * `available = max(0, free − reserved − headroom)`, where `free` is the
 * backend's free space corrected for the bytes this SE wrote or deleted since
 * the probe (so a cached probe never hides our own writes), and `reserved`
 * is what live reservations still hold back. Probes are cached for
 * `probeMaxAgeMs` and single-flight: 200 concurrent pollers cause one statfs.
 */
export class CapacityService {
  readonly #o: Required<Omit<CapacityServiceOptions, 'now'>> & { now: () => number };
  #last: Probe | undefined;
  #inFlight: Promise<Probe> | undefined;
  #lastIoErrorAtMs = Number.NEGATIVE_INFINITY;
  #lastIoError = '';

  constructor(options: CapacityServiceOptions) {
    this.#o = {
      probeMaxAgeMs: 1_000,
      etagGranularityBytes: 1024 * 1024,
      ioErrorWindowMs: 60_000,
      minFreeInodeRatio: 0.05,
      now: Date.now,
      ...options,
    };
  }

  /** Records a disk or backend I/O failure: health is `unhealthy` for `ioErrorWindowMs`. */
  noteIoError(error: unknown): void {
    this.#lastIoErrorAtMs = this.#o.now();
    this.#lastIoError = error instanceof Error ? error.message : String(error);
  }

  /**
   * Bytes a new reservation may take, before subtracting live reservations
   * (the ledger does that atomically): corrected free space − headroom.
   */
  async freeForReservations(): Promise<number> {
    const p = await this.#probe();
    if (!p.probe || p.probe.failure) return 0;
    return Math.max(0, this.#correctedFree(p) - this.#o.headroomBytes);
  }

  /** The current report and its ETag. */
  async snapshot(): Promise<CapacitySnapshot> {
    const p = await this.#probe();
    const reserved = this.#o.ledger.outstandingBytes;
    let total = 0;
    let used = 0;
    let available = 0;
    let health: StorageHealth = 'healthy';
    if (p.probe) {
      const delta = this.#heldBytes() - p.heldBytesAtProbe;
      total = p.probe.totalBytes;
      used = Math.min(total, Math.max(0, p.probe.usedBytes + delta));
      const free = this.#correctedFree(p);
      available = Math.min(total, Math.max(0, free - reserved - this.#o.headroomBytes));
      if (p.probe.freeInodeRatio < this.#o.minFreeInodeRatio || free < this.#o.headroomBytes) health = 'degraded';
      if (p.probe.failure) health = 'unhealthy';
    } else {
      health = 'unhealthy';
    }
    if (this.#o.now() - this.#lastIoErrorAtMs < this.#o.ioErrorWindowMs) health = 'unhealthy';
    if (health === 'unhealthy') available = 0;
    const report: CapacityReport = {
      storage_id: this.#o.storageId,
      mode: this.#o.mode,
      total,
      used,
      available,
      reserved,
      percent_used: total > 0 ? Math.round((used / total) * 10_000) / 100 : 0,
      health,
      backend: this.#o.backend.kind,
      location: this.#o.location,
      endpoint: this.#o.endpoint(),
      last_update: new Date(p.atMs).toISOString(),
    };
    const { last_update: _ignored, ...stable } = report;
    const g = this.#o.etagGranularityBytes;
    const q = (bytes: number) => Math.floor(bytes / g);
    const tagged = { ...stable, total: q(total), used: q(used), available: q(available), reserved: q(reserved) };
    delete (tagged as Partial<typeof tagged>).percent_used;
    const etag = `W/"c-${createHash('sha1').update(JSON.stringify(tagged)).digest('hex').slice(0, 20)}"`;
    return { report, etag };
  }

  /** Why the backend is unhealthy, or `undefined`. */
  async failure(): Promise<string | undefined> {
    const p = await this.#probe();
    if (p.error) return p.error;
    if (p.probe?.failure) return p.probe.failure;
    if (this.#o.now() - this.#lastIoErrorAtMs < this.#o.ioErrorWindowMs)
      return `recent I/O error: ${this.#lastIoError}`;
    return undefined;
  }

  #heldBytes(): number {
    return this.#o.backend.storedBytes + this.#o.stagedBytes();
  }

  #correctedFree(p: Probe): number {
    if (!p.probe) return 0;
    return Math.max(0, p.probe.freeBytes - (this.#heldBytes() - p.heldBytesAtProbe));
  }

  #probe(): Promise<Probe> {
    const now = this.#o.now();
    if (this.#last && now - this.#last.atMs < this.#o.probeMaxAgeMs) return Promise.resolve(this.#last);
    this.#inFlight ??= (async () => {
      const heldBytesAtProbe = this.#heldBytes();
      const atMs = this.#o.now();
      try {
        const probe = await this.#o.backend.probe(this.#o.stagedBytes());
        this.#last = { probe, error: undefined, atMs, heldBytesAtProbe };
      } catch (error) {
        this.#last = { probe: undefined, error: (error as Error).message, atMs, heldBytesAtProbe };
      }
      return this.#last;
    })().finally(() => {
      this.#inFlight = undefined;
    });
    return this.#inFlight;
  }
}
