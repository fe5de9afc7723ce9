import { WRITABLE_STORAGE_MODES } from '@polyvision/shared';
import type { CachedCapacity } from '../capacity/capacity-cache.ts';
import { IDLE_MAX_FACTOR } from '../capacity/poll-state.ts';
import type { StorageElementConfig } from '../capacity/storage-elements.ts';
import type { JobsSummary } from './jobs-summary.ts';
import type { OpsEvent, OpsInstance } from './ops-store.ts';

/** Health as the map shows it: the SE's own, overridden by the monitor's verdict; `unknown` before any poll. */
export type MapHealth = 'healthy' | 'degraded' | 'unhealthy' | 'unknown';

/** Coordinates from the SE list config. */
export type MapCoordinates = { lat: number; lon: number } | { x: number; y: number };

/** One storage element on the map. Sizes in bytes, ages in milliseconds. */
export interface MapStorageElement {
  storage_id: string;
  location: string;
  endpoint: string;
  coordinates: MapCoordinates | null;
  mode: string | null;
  writable: boolean;
  health: MapHealth;
  /** The `health:{se_id}` value (e.g. `unhealthy: timeout: …`), or null. */
  health_detail: string | null;
  reachable: boolean | null;
  backend: string | null;
  total_bytes: number;
  used_bytes: number;
  reserved_bytes: number;
  available_bytes: number;
  percent_used: number;
  /** When the monitor last heard from the SE (ISO 8601), or null. */
  last_poll: string | null;
  last_poll_age_ms: number | null;
  /** Stale past this age: twice the longest interval the adaptive schedule uses for a healthy SE in this mode. */
  stale_after_ms: number;
  stale: boolean;
  /** Set while a 507 has marked the SE full (until its next successful poll). */
  full_marked_at: string | null;
  insufficient_storage_last_hour: number;
}

/** Sums over a set of SEs. `writable_*` count only writable, reachable, not unhealthy SEs. */
export interface CapacityTotals {
  storage_elements: number;
  unhealthy: number;
  total_bytes: number;
  used_bytes: number;
  reserved_bytes: number;
  available_bytes: number;
  writable_total_bytes: number;
  writable_available_bytes: number;
  /** 100 × (writable total − writable available) / writable total; 100 when nothing is writable. */
  writable_percent_used: number;
  /** writable_percent_used ≥ the warning threshold. */
  warning: boolean;
}

/** One datacenter: its SEs (ids) and totals. */
export interface MapDatacenter {
  location: string;
  /** The mean of its SEs' configured coordinates (those of the first kind given), or null. */
  coordinates: MapCoordinates | null;
  storage_ids: string[];
  totals: CapacityTotals;
}

/** The whole map (`GET /api/v1/capacity-map`, and each SSE `capacity-map` event). */
export interface CapacityMap {
  generated_at: string;
  /** The replica that answered. */
  served_by: string;
  monitor_enabled: boolean;
  poll_base_interval_ms: number;
  warning_percent: number;
  leader: { instance_id: string; term: number; since: string | null; lease_remaining_ms: number } | null;
  /** Replicas seen recently, with their roles; followers are those not leading. */
  instances: Array<OpsInstance & { leader: boolean }>;
  datacenters: MapDatacenter[];
  storage_elements: MapStorageElement[];
  totals: CapacityTotals;
  events: OpsEvent[];
  jobs: JobsSummary | { error: string };
  /**
   * Whether the replica could read the shared state (Redis). While it cannot,
   * the rest of the map is the last one read (`as_of`), and ingest keeps
   * placing uploads on its last known capacity.
   */
  redis: { reachable: boolean; since: string | null; as_of: string | null; message: string | null };
}

/** What {@link assembleCapacityMap} is built from: everything already read. */
export interface CapacityMapInput {
  nowMs: number;
  servedBy: string;
  monitorEnabled: boolean;
  pollBaseIntervalMs: number;
  pollMaxIntervalMs: number;
  warningPercent: number;
  storageElements: readonly StorageElementConfig[];
  cache: ReadonlyMap<string, CachedCapacity>;
  healthKeys: ReadonlyMap<string, string | null>;
  count507: ReadonlyMap<string, number>;
  leader: CapacityMap['leader'];
  instances: readonly OpsInstance[];
  events: OpsEvent[];
  jobs: CapacityMap['jobs'];
}

/**
 * The longest poll interval of a healthy SE in `mode` under the adaptive
 * schedule (core/src/capacity/poll-state.ts): `maxIntervalMs` for `ro`/`ar`,
 * base × {@link IDLE_MAX_FACTOR} (capped at max) for an idle writable SE.
 */
export function expectedPollIntervalMs(mode: string | null, baseIntervalMs: number, maxIntervalMs: number): number {
  if (mode !== null && !(WRITABLE_STORAGE_MODES as readonly string[]).includes(mode)) return maxIntervalMs;
  return Math.min(maxIntervalMs, baseIntervalMs * IDLE_MAX_FACTOR);
}

/** The map's health of one SE from its cache entry and `health:{se_id}` key. */
export function mapHealth(entry: CachedCapacity | undefined, healthKey: string | null | undefined): MapHealth {
  if (healthKey?.startsWith('unhealthy')) return 'unhealthy';
  if (!entry) return healthKey ? (healthKey === 'degraded' ? 'degraded' : 'healthy') : 'unknown';
  if (!entry.reachable || entry.health === 'unhealthy') return 'unhealthy';
  return entry.health === 'degraded' ? 'degraded' : 'healthy';
}

/** Sums `ses`, flagging a warning at `warningPercent` of writable capacity used. */
export function totalsOf(ses: readonly MapStorageElement[], warningPercent: number): CapacityTotals {
  const t = {
    storage_elements: ses.length,
    unhealthy: 0,
    total_bytes: 0,
    used_bytes: 0,
    reserved_bytes: 0,
    available_bytes: 0,
    writable_total_bytes: 0,
    writable_available_bytes: 0,
  };
  for (const se of ses) {
    if (se.health === 'unhealthy') t.unhealthy++;
    t.total_bytes += se.total_bytes;
    t.used_bytes += se.used_bytes;
    t.reserved_bytes += se.reserved_bytes;
    t.available_bytes += se.available_bytes;
    if (se.writable && se.health !== 'unhealthy' && se.health !== 'unknown' && se.reachable !== false) {
      t.writable_total_bytes += se.total_bytes;
      t.writable_available_bytes += se.available_bytes;
    }
  }
  const writablePercentUsed =
    t.writable_total_bytes > 0
      ? Math.round(((t.writable_total_bytes - t.writable_available_bytes) / t.writable_total_bytes) * 1000) / 10
      : 100;
  return { ...t, writable_percent_used: writablePercentUsed, warning: writablePercentUsed >= warningPercent };
}

/**
 * Builds the map from values already read (pure; unit-tested). SEs keep the
 * configured order; datacenters appear in order of their first SE.
 */
export function assembleCapacityMap(input: CapacityMapInput): CapacityMap {
  const ses: MapStorageElement[] = input.storageElements.map((se) => {
    const entry = input.cache.get(se.storage_id);
    const healthKey = input.healthKeys.get(se.storage_id) ?? null;
    const lastPollMs = entry?.last_poll ? Date.parse(entry.last_poll) : Number.NaN;
    const ageMs = Number.isFinite(lastPollMs) ? Math.max(0, input.nowMs - lastPollMs) : null;
    const mode = entry?.mode ?? null;
    const staleAfterMs = 2 * expectedPollIntervalMs(mode, input.pollBaseIntervalMs, input.pollMaxIntervalMs);
    return {
      storage_id: se.storage_id,
      location: se.location,
      endpoint: se.endpoint,
      coordinates: se.coordinates ?? null,
      mode,
      writable: mode !== null && (WRITABLE_STORAGE_MODES as readonly string[]).includes(mode),
      health: mapHealth(entry, healthKey),
      health_detail: healthKey,
      reachable: entry ? entry.reachable : null,
      backend: entry?.backend ?? null,
      total_bytes: entry?.total ?? 0,
      used_bytes: entry?.used ?? 0,
      reserved_bytes: entry?.reserved ?? 0,
      available_bytes: entry?.available ?? 0,
      percent_used: entry?.percent_used ?? 0,
      last_poll: entry?.last_poll || null,
      last_poll_age_ms: ageMs,
      stale_after_ms: staleAfterMs,
      stale: input.monitorEnabled && (ageMs === null || ageMs > staleAfterMs),
      full_marked_at: entry?.full_marked_at ?? null,
      insufficient_storage_last_hour: input.count507.get(se.storage_id) ?? 0,
    };
  });
  const locations = [...new Set(ses.map((se) => se.location))];
  const datacenters = locations.map((location) => {
    const members = ses.filter((se) => se.location === location);
    return {
      location,
      coordinates: meanCoordinates(members.map((se) => se.coordinates)),
      storage_ids: members.map((se) => se.storage_id),
      totals: totalsOf(members, input.warningPercent),
    };
  });
  const leaderId = input.leader?.instance_id;
  return {
    generated_at: new Date(input.nowMs).toISOString(),
    served_by: input.servedBy,
    monitor_enabled: input.monitorEnabled,
    poll_base_interval_ms: input.pollBaseIntervalMs,
    warning_percent: input.warningPercent,
    leader: input.leader,
    instances: input.instances.map((i) => ({ ...i, leader: i.instance_id === leaderId })),
    datacenters,
    storage_elements: ses,
    totals: totalsOf(ses, input.warningPercent),
    events: input.events,
    jobs: input.jobs,
    redis: { reachable: true, since: null, as_of: null, message: null },
  };
}

/** The mean of the coordinates of the first kind present (lat/lon or x/y); null when none. */
export function meanCoordinates(list: ReadonlyArray<MapCoordinates | null>): MapCoordinates | null {
  const first = list.find((c) => c !== null);
  if (!first) return null;
  if ('lat' in first) {
    const geo = list.filter((c): c is { lat: number; lon: number } => c !== null && 'lat' in c);
    return { lat: mean(geo.map((c) => c.lat)), lon: mean(geo.map((c) => c.lon)) };
  }
  const plane = list.filter((c): c is { x: number; y: number } => c !== null && 'x' in c);
  return { x: mean(plane.map((c) => c.x)), y: mean(plane.map((c) => c.y)) };
}

function mean(values: number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}
