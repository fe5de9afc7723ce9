/**
 * The worker runtime: runs `StageHandler`s on `polyvision.tasks.<stage>`,
 * claims tasks (PostgreSQL, plus the seeds' Redis stage keys), reports
 * results to `polyvision.jobs.commands`. See README.md for plugging a stage in.
 */
export * from './redis-stage-keys.ts';
export * from './report-ids.ts';
export * from './stage-claims.ts';
export * from './stage-handler.ts';
export * from './stage-registry.ts';
export * from './worker-config.ts';
export * from './worker-runtime.ts';
export * from './worker-service.ts';
