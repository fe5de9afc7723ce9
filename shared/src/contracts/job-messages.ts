import { createHash } from 'node:crypto';
import { z } from 'zod';
import { artifactRefSchema } from './artifact-ref.ts';
import { isoDateTime, safeId } from './safe-id.ts';
import { stageSchema } from './stages.ts';

/**
 * Messages on `polyvision.jobs.commands` (DESIGN.md "Kafka topics"; seeds
 * orchestrator-ha-decision.md and orchestration-decision.md), keyed by
 * `jobKey(organization_id, match_id)`. Redelivery happens (rebalances,
 * at-least-once), so every message carries a unique `message_id` and
 * consumers deduplicate by it and by `job:processed:{job_id}`.
 */
const envelope = {
  /** Unique per message (UUID), for deduplication. */
  message_id: z.uuid(),
  job_id: safeId,
  organization_id: safeId,
  match_id: safeId,
  /** When the producer created the message (ISO 8601). */
  created_at: isoDateTime,
};

/** Model version per stage (`detect: 'yolo-v8n-2026.1'`); feeds the idempotency key `{stage}:{org}:{match}:{model_version}`. */
export const modelVersionsSchema = z.partialRecord(stageSchema, z.string().min(1).max(128));

/** A stage run's fields, common to worker reports. */
const stageRun = {
  stage: stageSchema,
  /** 1 for the first try; the orchestrator increments it on retry. */
  attempt: z.number().int().min(1).max(100),
  /** Which worker process sent it. */
  worker_id: z.string().min(1).max(256),
  /**
   * The `message_id` of the task the report is about. Needed for a match job
   * (one row per stage and segment); whole-file jobs find the stage by name.
   */
  task_message_id: z.uuid().optional(),
};

/** An inclusive range of segment indexes of a match job (`from_index` ≤ `to_index`). */
export const segmentRangeSchema = z
  .object({
    from_index: z.number().int().min(0).max(1_000_000),
    to_index: z.number().int().min(0).max(1_000_000),
  })
  .refine((r) => r.from_index <= r.to_index, { message: 'from_index must not exceed to_index' });
export type SegmentRange = z.infer<typeof segmentRangeSchema>;

/** Ingest (or an operator) asks for a match to be processed. */
export const jobSubmitSchema = z.object({
  type: z.literal('job.submit'),
  ...envelope,
  /** The uploaded panorama and any other inputs. */
  inputs: z.array(artifactRefSchema).min(1).max(64),
  /** Stages to run, in pipeline order. @defaultValue all stages */
  stages: z.array(stageSchema).min(1).optional(),
  model_versions: modelVersionsSchema.optional(),
  priority: z.enum(['normal', 'high']).default('normal'),
  /** Who asked (service or operator name). */
  requested_by: z.string().min(1).max(256).optional(),
});

/** Run again from a stage (new model version, fixed inputs). */
export const jobReprocessSchema = z.object({
  type: z.literal('job.reprocess'),
  ...envelope,
  from_stage: stageSchema,
  model_versions: modelVersionsSchema.optional(),
  /** Match jobs: only these segments (and, for sequential stages, the segments after them). @defaultValue the whole match */
  segments: segmentRangeSchema.optional(),
  reason: z.string().max(1024).optional(),
  requested_by: z.string().min(1).max(256).optional(),
});

/** Stop a job; running stages are told to stop. */
export const jobCancelSchema = z.object({
  type: z.literal('job.cancel'),
  ...envelope,
  /** Match jobs: cancel only these segments (the match goes on without them). @defaultValue the whole job */
  segments: segmentRangeSchema.optional(),
  reason: z.string().max(1024).optional(),
  requested_by: z.string().min(1).max(256).optional(),
});

/**
 * A panorama segment of a match arrived (ingest, for an edge-named upload).
 * The first one opens the match job (`job_id` = {@link matchJobId}); the
 * segment's index in the match is `slot` minus the slot of the segment that
 * opened the job (the edge numbers segments by wall-clock slot,
 * `floor(start epoch s / segment_duration_s)`).
 */
export const matchSegmentSchema = z.object({
  type: z.literal('match.segment'),
  ...envelope,
  /** The edge's slot number of the segment. */
  slot: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  /** Length of the segment, seconds. */
  duration_s: z.number().positive().max(3600),
  /** The segment's panorama. */
  input: artifactRefSchema,
  /** Inputs of every segment (the venue calibration), taken when the segment opens the job. */
  match_inputs: z.array(artifactRefSchema).max(16).optional(),
  /** Stages of the match job (when the segment opens it). @defaultValue all stages but stitch */
  stages: z.array(stageSchema).min(1).optional(),
  model_versions: modelVersionsSchema.optional(),
  requested_by: z.string().min(1).max(256).optional(),
});

/**
 * The start of a match: the edge's `match-start-<first slot>.json` marker, uploaded ahead of the
 * match's panoramas. It opens the match job (`job_id` = {@link matchJobId}) at `first_slot`, so
 * that a segment's index is `slot − first_slot` even when a later segment reaches the core first.
 * A job already opened (by this marker again, or by a segment that overtook it) is left as it is.
 */
export const matchOpenSchema = z.object({
  type: z.literal('match.open'),
  ...envelope,
  /** The edge's slot of the match's first panorama segment. */
  first_slot: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  /** Inputs of every segment (the venue calibration). */
  match_inputs: z.array(artifactRefSchema).max(16).optional(),
  /** Stages of the match job. @defaultValue all stages but stitch */
  stages: z.array(stageSchema).min(1).optional(),
  model_versions: modelVersionsSchema.optional(),
  requested_by: z.string().min(1).max(256).optional(),
});

/**
 * The end of a match: the edge's `match-end.json` marker (`reason: 'marker'`),
 * an operator (`'operator'`), or the reconciler after the match was idle
 * for `ORCHESTRATOR_MATCH_IDLE_GRACE_MS` (`'idle_grace'`: segments still
 * missing then are given up as missing).
 */
export const matchEndSchema = z.object({
  type: z.literal('match.end'),
  ...envelope,
  /** The edge's slot of the match's last segment. @defaultValue the last slot received */
  last_slot: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
  reason: z.enum(['marker', 'operator', 'idle_grace']),
  requested_by: z.string().min(1).max(256).optional(),
});

/**
 * The deterministic job id of an organization's match processed as one job
 * (`match-<sha256(org:match) 32 hex>`): every segment upload names the same job.
 */
export function matchJobId(organizationId: string, matchId: string): string {
  return `match-${createHash('sha256').update(`${organizationId}:${matchId}`).digest('hex').slice(0, 32)}`;
}

/** A worker's progress (0..1) on a stage. */
export const stageProgressSchema = z.object({
  type: z.literal('stage.progress'),
  ...envelope,
  ...stageRun,
  /** Fraction done, 0 to 1. */
  progress: z.number().min(0).max(1),
  /** Optional human note ("frame 1200/5400"). */
  note: z.string().max(1024).optional(),
});

/** A worker finished a stage; outputs are stored artifacts. */
export const stageCompletedSchema = z.object({
  type: z.literal('stage.completed'),
  ...envelope,
  ...stageRun,
  model_version: z.string().min(1).max(128),
  outputs: z.array(artifactRefSchema).max(256),
  duration_ms: z.number().int().nonnegative(),
  /** Small stage-specific numbers (frames, detections, …). */
  stats: z.record(z.string(), z.number()).optional(),
});

/** The error of a failed stage or poison message: a PolyvisionError's code, message and retriable flag. */
export const messageErrorSchema = z.object({
  code: z.string().min(1).max(128),
  message: z.string().max(4096),
  retriable: z.boolean(),
});
export type MessageError = z.infer<typeof messageErrorSchema>;

/** A worker failed a stage; `error.retriable` tells the orchestrator whether another attempt makes sense. */
export const stageFailedSchema = z.object({
  type: z.literal('stage.failed'),
  ...envelope,
  ...stageRun,
  error: messageErrorSchema,
});

/** Any message on `polyvision.jobs.commands`, discriminated on `type`. */
export const jobCommandSchema = z.discriminatedUnion('type', [
  jobSubmitSchema,
  jobReprocessSchema,
  jobCancelSchema,
  matchSegmentSchema,
  matchOpenSchema,
  matchEndSchema,
  stageProgressSchema,
  stageCompletedSchema,
  stageFailedSchema,
]);

export type JobSubmit = z.infer<typeof jobSubmitSchema>;
export type JobReprocess = z.infer<typeof jobReprocessSchema>;
export type JobCancel = z.infer<typeof jobCancelSchema>;
export type MatchSegment = z.infer<typeof matchSegmentSchema>;
export type MatchOpen = z.infer<typeof matchOpenSchema>;
export type MatchEnd = z.infer<typeof matchEndSchema>;
export type StageProgress = z.infer<typeof stageProgressSchema>;
export type StageCompleted = z.infer<typeof stageCompletedSchema>;
export type StageFailed = z.infer<typeof stageFailedSchema>;
export type JobCommand = z.infer<typeof jobCommandSchema>;
export type JobCommandType = JobCommand['type'];
