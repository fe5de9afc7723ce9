import { type StorageHealth, type StorageMode, WRITABLE_STORAGE_MODES } from '@polyvision/shared';

/** What the selector needs to know about one SE (from the capacity cache). */
export interface SelectableStorage {
  storage_id: string;
  mode: StorageMode;
  /** Bytes the SE can still promise (its `available`, already net of its reservations). */
  available: number;
  /** The SE's own health report. */
  health: StorageHealth;
  /** The monitor's view: false after `CAPACITY_MONITOR_FAILURE_THRESHOLD` failed polls. */
  reachable: boolean;
  /** Datacenter. */
  location: string;
}

/** Options of {@link selectStorage}. */
export interface SelectStorageOptions {
  /** Size of the file to place, in bytes. */
  sizeBytes: number;
  /** Bytes an SE must keep free beyond the file. @defaultValue 0 */
  headroomBytes?: number;
  /** SEs not to choose (they answered 507 during this placement). */
  excluded?: ReadonlySet<string>;
  /** Datacenters in order of preference; the first one with a fitting SE wins. @defaultValue [] */
  preferredLocations?: readonly string[];
  /** Uniform random source in [0, 1). @defaultValue Math.random */
  random?: () => number;
}

/** Why nothing was selected, per SE id (for the 507 body and logs). */
export type RejectionReasons = Record<string, 'excluded' | 'not_writable' | 'unhealthy' | 'unreachable' | 'too_small'>;

/** Outcome of {@link selectStorage}. */
export interface Selection<T extends SelectableStorage> {
  /** The chosen SE, or undefined when none fits. */
  chosen: T | undefined;
  /** SEs that could have taken the file. */
  eligible: T[];
  /** Why the others could not. */
  rejected: RejectionReasons;
}

/**
 * Picks the storage element for a file of `sizeBytes`.
 *
 * 1. Eligible: writable mode (`edit`/`rw`), SE health not `unhealthy`,
 *    reachable by the monitor, not excluded, and
 *    `available − headroomBytes ≥ sizeBytes`.
 * 2. Affinity: the first datacenter of `preferredLocations` that has an
 *    eligible SE restricts the choice to it; otherwise all eligible SEs.
 * 3. Spread: a weighted random draw with weight = free bytes left after the
 *    file (`available − headroom − size`, at least 1). This is MinIO's
 *    placement among server pools ("the pool with the most free space is
 *    likely, not certain", minio/cmd/erasure-server-pool.go
 *    getAvailablePoolIdx), so parallel uploads do not all pile onto the
 *    emptiest SE and all meet its 507 at once; `degraded` SEs get half weight.
 */
export function selectStorage<T extends SelectableStorage>(
  candidates: readonly T[],
  options: SelectStorageOptions,
): Selection<T> {
  const headroom = options.headroomBytes ?? 0;
  const excluded = options.excluded ?? new Set<string>();
  const random = options.random ?? Math.random;
  const rejected: RejectionReasons = {};
  const eligible: T[] = [];
  for (const se of candidates) {
    if (excluded.has(se.storage_id)) rejected[se.storage_id] = 'excluded';
    else if (!WRITABLE_STORAGE_MODES.includes(se.mode)) rejected[se.storage_id] = 'not_writable';
    else if (se.health === 'unhealthy') rejected[se.storage_id] = 'unhealthy';
    else if (!se.reachable) rejected[se.storage_id] = 'unreachable';
    else if (se.available - headroom < options.sizeBytes) rejected[se.storage_id] = 'too_small';
    else eligible.push(se);
  }
  let pool = eligible;
  for (const location of options.preferredLocations ?? []) {
    const local = eligible.filter((se) => se.location === location);
    if (local.length > 0) {
      pool = local;
      break;
    }
  }
  if (pool.length === 0) return { chosen: undefined, eligible, rejected };
  const weights = pool.map((se) => {
    const free = Math.max(1, se.available - headroom - options.sizeBytes);
    return se.health === 'degraded' ? free / 2 : free;
  });
  const total = weights.reduce((a, b) => a + b, 0);
  let draw = random() * total;
  for (let i = 0; i < pool.length; i++) {
    draw -= weights[i] ?? 0;
    if (draw < 0) return { chosen: pool[i], eligible, rejected };
  }
  return { chosen: pool[pool.length - 1], eligible, rejected };
}
