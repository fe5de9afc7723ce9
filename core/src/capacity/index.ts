/**
 * Capacity: knowing which storage element can take a file (seed
 * capacity-management-migration-plan.md, Phases 1 and 2).
 *
 * - {@link AdaptiveCapacityMonitor} — one elected leader (key
 *   `capacity_monitor:leader_lock`) polls every SE's `GET /api/v1/capacity`
 *   on an adaptive schedule and fills the Redis cache (`capacity:{se_id}`,
 *   `health:{se_id}`, stamped with its term); followers read it; a 507
 *   triggers a lazy update.
 * - {@link selectStorage} — picks an SE: writable, healthy, fits with
 *   headroom, datacenter affinity, spread weighted by free bytes.
 * - {@link loadCapacityMonitorSettings} — the `CAPACITY_MONITOR_*` settings
 *   with the seed's defaults; {@link loadStorageElements} — the SE list.
 * - {@link CapacityCache}, {@link fetchCapacity}, poll-state transitions and
 *   {@link createCapacityMetrics} (the seed's eight metrics).
 */
export * from './capacity-cache.ts';
export * from './capacity-client.ts';
export * from './metrics.ts';
export * from './monitor.ts';
export * from './options.ts';
export * from './poll-state.ts';
export * from './selector.ts';
export * from './storage-elements.ts';
