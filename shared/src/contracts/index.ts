/**
 * Contracts: zod schemas and their types for every HTTP body and message
 * between Polyvision services. One file per contract:
 * - safe-id.ts: `safeId` (every id that may reach a path), `sizeBytes`, `isoDateTime`
 * - capacity-report.ts: SE `GET /api/v1/capacity`
 * - reservation.ts: SE reservations and the 507 body
 * - error-body.ts: `{code, message}` of every error answer
 * - uploads.ts: tus `Upload-Metadata`
 * - stages.ts, topics.ts: stage names, topic names, partitions, `jobKey`
 * - artifact-ref.ts: where a stored file lives
 * - job-messages.ts: `polyvision.jobs.commands` (discriminated union on `type`)
 * - task-message.ts: `polyvision.tasks.<stage>`, idempotency keys
 * - job-event.ts: `polyvision.jobs.events`, `polyvision.dlq`
 * - venue-calibration.ts: `venue.json`, the camera rig calibration the edge stitcher reads
 */
export * from './artifact-ref.ts';
export * from './capacity-report.ts';
export * from './error-body.ts';
export * from './job-event.ts';
export * from './job-messages.ts';
export * from './match-files.ts';
export * from './reservation.ts';
export * from './safe-id.ts';
export * from './stages.ts';
export * from './task-message.ts';
export * from './topics.ts';
export * from './uploads.ts';
export * from './venue-calibration.ts';
