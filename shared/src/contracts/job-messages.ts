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
};

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
  reason: z.string().max(1024).optional(),
  requested_by: z.string().min(1).max(256).optional(),
});

/** Stop a job; running stages are told to stop. */
export const jobCancelSchema = z.object({
  type: z.literal('job.cancel'),
  ...envelope,
  reason: z.string().max(1024).optional(),
  requested_by: z.string().min(1).max(256).optional(),
});

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
  stageProgressSchema,
  stageCompletedSchema,
  stageFailedSchema,
]);

export type JobSubmit = z.infer<typeof jobSubmitSchema>;
export type JobReprocess = z.infer<typeof jobReprocessSchema>;
export type JobCancel = z.infer<typeof jobCancelSchema>;
export type StageProgress = z.infer<typeof stageProgressSchema>;
export type StageCompleted = z.infer<typeof stageCompletedSchema>;
export type StageFailed = z.infer<typeof stageFailedSchema>;
export type JobCommand = z.infer<typeof jobCommandSchema>;
export type JobCommandType = JobCommand['type'];
