import { z } from 'zod';
import { artifactRefSchema } from './artifact-ref.ts';
import { isoDateTime, safeId } from './safe-id.ts';
import { type Stage, stageSchema } from './stages.ts';

/**
 * One segment of a match job: its place in the match and on the match clock.
 * `final` is true only for the match's last segment, once the end of the match is known;
 * `carry_from` / `gap_s` say where a sequential stage continues from when segments were left out.
 */
export const segmentRefSchema = z.object({
  /** 0-based position of the segment in the match. */
  index: z.number().int().min(0).max(1_000_000),
  /** Start of the segment on the match clock, in seconds. */
  start_s: z.number().nonnegative(),
  /** Length of the segment, in seconds. */
  duration_s: z.number().positive(),
  /** True for the match's last segment (the end of the match is known). */
  final: z.boolean(),
  /**
   * Sequential stages: the segment whose carry this task reads — the nearest earlier segment that
   * is still in the match (missing, cancelled and failed ones are skipped) — or null to start fresh
   * (no earlier segment went through). Absent: `index − 1` (index 0: fresh).
   */
  carry_from: z.number().int().min(0).max(1_000_000).nullable().optional(),
  /**
   * Match-clock seconds between the end of `carry_from` and this segment's start: the length of the
   * segments left out between them (0 or absent: none). Stages let time pass over it (the tracker's
   * lost tracks expire, the playlist marks a discontinuity).
   */
  gap_s: z.number().nonnegative().optional(),
});
export type SegmentRef = z.infer<typeof segmentRefSchema>;

/**
 * Stages that run over a match's segments in order, each segment's run
 * reading the state its previous segment's run left (a "carry" artifact):
 * tracker state, the virtual camera's path, analytics accumulators, the HLS playlist.
 * `detect` (and `stitch`) run per segment in parallel.
 */
export const SEGMENT_SEQUENTIAL_STAGES = Object.freeze([
  'track',
  'vcam',
  'analyze',
  'encode',
] as const satisfies readonly Stage[]);

/**
 * Artifact kind of the state a sequential stage carries from segment k to k+1
 * (`track-carry`, …). The orchestrator passes segment k's carry in the inputs of
 * the same stage's task for segment k+1; absent for segment 0.
 */
export function carryKind(stage: Stage): string {
  return `${stage}-carry`;
}

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
  /**
   * Present when the job is a match processed segment by segment (issue #18):
   * the segment of the match this task is for. Absent for a whole-file job.
   */
  segment: segmentRefSchema.optional(),
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
