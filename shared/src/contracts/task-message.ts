import { z } from 'zod';
import { artifactRefSchema } from './artifact-ref.ts';
import { isoDateTime, safeId } from './safe-id.ts';
import { type Stage, stageSchema } from './stages.ts';

/**
 * A unit of work on `polyvision.tasks.<stage>`, written by the orchestrator
 * through its outbox and consumed by group `polyvision-worker-<stage>`.
 * Workers claim it with the Redis key {@link stageIdempotencyKey}
 * (`processing` 2 h, `completed` 7 days; seed orchestration-decision.md).
 */
export const stageTaskSchema = z.object({
  type: z.literal('stage.task'),
  message_id: z.uuid(),
  job_id: safeId,
  organization_id: safeId,
  match_id: safeId,
  created_at: isoDateTime,
  stage: stageSchema,
  attempt: z.number().int().min(1).max(100),
  model_version: z.string().min(1).max(128),
  /** Outputs of earlier stages (and the uploaded panorama) this stage reads. */
  inputs: z.array(artifactRefSchema).max(256),
  /** Stage options (resolution, bitrate ladder, …). */
  params: z.record(z.string(), z.unknown()).default({}),
  /** The orchestrator's fencing term for this job's partition, echoed back in results. */
  term: z.number().int().nonnegative().optional(),
  /** Give up (and report `stage.failed` with code `deadline_exceeded`) after this instant. */
  deadline_at: isoDateTime.optional(),
});
export type StageTask = z.infer<typeof stageTaskSchema>;

/** Redis idempotency key of a stage run: `{stage}:{organization_id}:{match_id}:{model_version}`. */
export function stageIdempotencyKey(
  stage: Stage,
  organizationId: string,
  matchId: string,
  modelVersion: string,
): string {
  return `${stage}:${organizationId}:${matchId}:${modelVersion}`;
}

/** Redis key marking a job command as handled: `job:processed:{job_id}` (7 days). */
export function jobProcessedKey(jobId: string): string {
  return `job:processed:${jobId}`;
}
