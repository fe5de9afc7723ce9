import { getCounter, getGauge, getHistogram, type Registry } from '@polyvision/shared';

/**
 * The eight Prometheus metrics of seed capacity-management-migration-plan.md
 * ("Prometheus Metrics"), with exactly its names and labels.
 */
export function createCapacityMetrics(registry: Registry) {
  return {
    /** 1 = leader, 0 = follower. */
    leaderState: getGauge<'instance_id'>(registry, {
      name: 'capacity_monitor_leader_state',
      help: 'Capacity monitor role of this instance: 1 leader, 0 follower',
      labelNames: ['instance_id'],
    }),
    /** transition_type: acquired | lost | renewed. */
    leaderTransitions: getCounter<'instance_id' | 'transition_type'>(registry, {
      name: 'capacity_monitor_leader_transitions_total',
      help: 'Leadership transitions of the capacity monitor (acquired, lost, renewed)',
      labelNames: ['instance_id', 'transition_type'],
    }),
    /** result: acquired | held_by_other | error. */
    lockAcquisition: getHistogram<'result'>(registry, {
      name: 'leader_lock_acquisition_duration_seconds',
      help: 'Latency of one attempt to take capacity_monitor:leader_lock',
      labelNames: ['result'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    }),
    /** status: ok | not_modified | error. */
    pollDuration: getHistogram<'storage_id' | 'status'>(registry, {
      name: 'capacity_poll_duration_seconds',
      help: 'Latency of one capacity poll of a storage element, retries included',
      labelNames: ['storage_id', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15, 30, 60],
    }),
    /** error_type: timeout | connection | http_4xx | http_5xx | invalid_response | redirect_refused | other. */
    pollFailures: getCounter<'storage_id' | 'error_type'>(registry, {
      name: 'capacity_poll_failures_total',
      help: 'Failed capacity polls by storage element and error type',
      labelNames: ['storage_id', 'error_type'],
    }),
    /** reason: insufficient_storage | manual. */
    lazyUpdates: getCounter<'storage_id' | 'reason'>(registry, {
      name: 'lazy_update_triggers_total',
      help: 'Immediate capacity refreshes triggered outside the schedule (e.g. by a 507)',
      labelNames: ['storage_id', 'reason'],
    }),
    /** SEs known healthy and reachable, by mode. */
    storageAvailable: getGauge<'mode'>(registry, {
      name: 'storage_elements_available',
      help: 'Storage elements that are reachable and not unhealthy, by mode',
      labelNames: ['mode'],
    }),
    /** result: hit | miss. */
    cacheHits: getCounter<'result'>(registry, {
      name: 'capacity_cache_hits_total',
      help: 'Capacity cache reads by result (hit, miss)',
      labelNames: ['result'],
    }),
  };
}

export type CapacityMetrics = ReturnType<typeof createCapacityMetrics>;
