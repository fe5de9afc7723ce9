/**
 * The partitioned orchestrator (issue 6; seeds orchestrator-ha-decision.md,
 * orchestration-decision.md):
 * - `Orchestrator`: one replica of group `polyvision-orchestrator` over
 *   `polyvision.jobs.commands`; job state machine in PostgreSQL
 *   (`state/`), transactional outbox + relay (`outbox/`), fencing by
 *   partition epochs (`fencing/`), `job:processed` Redis fast path
 *   (`idempotency/`), DLQ, seed metrics (`metrics/`).
 * - `Reconciler` + `startReconcilerLeadership` (`reconcile/`): overdue stages, on one replica.
 * - `jobRoutes` (`http/`): `GET /api/v1/jobs/:id` and the filtered list.
 * - `JobCommandClient`: submit, reprocess, cancel.
 * - `startOrchestratorService` (`service/`): the process composition used by the CLI.
 */
export * from './backoff.ts';
export * from './contracts/index.ts';
export * from './dead-letter.ts';
export * from './errors.ts';
export * from './fencing/partition-ownership.ts';
export * from './http/job-routes.ts';
export * from './idempotency/idempotency-cache.ts';
export * from './job-command-client.ts';
export * from './metrics/orchestrator-metrics.ts';
export * from './options.ts';
export * from './orchestrator.ts';
export * from './outbox/outbox-relay.ts';
export * from './outbox/outbox-writer.ts';
export * from './reconcile/reconciler.ts';
export * from './reconcile/reconciler-leadership.ts';
export * from './service/index.ts';
export * from './state/job-queries.ts';
export * from './state/job-rows.ts';
export * from './state/job-state-machine.ts';
