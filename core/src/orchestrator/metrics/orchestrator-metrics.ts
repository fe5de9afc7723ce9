import { getCounter, getGauge, getHistogram, type Registry } from '@polyvision/shared';

/**
 * The seed metrics of the orchestrator (orchestrator-ha-decision.md):
 * `consumer_lag`, `rebalance_count`, `job_processing_time`, `idempotency_hits`,
 * plus what operating it needs (commands handled, DLQ, outbox backlog).
 * Names carry the `polyvision_orchestrator_` prefix and their unit.
 */
export function createOrchestratorMetrics(registry: Registry) {
  return {
    consumerLag: getGauge<'topic' | 'partition'>(registry, {
      name: 'polyvision_orchestrator_consumer_lag',
      help: 'Messages of the commands topic not yet committed by the orchestrator group, per partition',
      labelNames: ['topic', 'partition'],
    }),
    rebalanceCount: getCounter(registry, {
      name: 'polyvision_orchestrator_rebalance_count',
      help: 'Partition assignments this replica received (one per rebalance)',
    }),
    jobProcessingTime: getHistogram<'status'>(registry, {
      name: 'polyvision_orchestrator_job_processing_time_seconds',
      help: 'Time from job submission to its end (completed, failed, cancelled)',
      labelNames: ['status'],
      buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200],
    }),
    idempotencyHits: getCounter<'source'>(registry, {
      name: 'polyvision_orchestrator_idempotency_hits',
      help: 'Duplicate commands skipped, by who caught them (redis fast path or the database)',
      labelNames: ['source'],
    }),
    commandsHandled: getCounter<'type' | 'outcome'>(registry, {
      name: 'polyvision_orchestrator_commands_handled_total',
      help: 'Commands handled, by type and outcome (applied, duplicate, stale, rejected, dead_lettered, fenced)',
      labelNames: ['type', 'outcome'],
    }),
    ownedPartitions: getGauge(registry, {
      name: 'polyvision_orchestrator_owned_partitions',
      help: 'Commands partitions this replica owns now',
    }),
    outboxPublished: getCounter(registry, {
      name: 'polyvision_orchestrator_outbox_published_total',
      help: 'Outbox rows published by this replica',
    }),
  };
}

export type OrchestratorMetrics = ReturnType<typeof createOrchestratorMetrics>;
