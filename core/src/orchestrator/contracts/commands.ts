import { z } from 'zod';
import { STAGE_NAMES } from './stages.ts';

/**
 * Messages on `polyvision.jobs.commands` (key `${organization_id}:${match_id}`),
 * all JSON. Every message carries a `message_id` that is the same on every
 * redelivery or re-send of the same fact (workers derive it from the task id),
 * so the orchestrator can apply each fact once.
 */

const id = z.string().min(1).max(200);
const stage = z.enum(STAGE_NAMES);

const base = {
  message_id: id,
  job_id: id,
  organization_id: id,
  match_id: id,
};

/** A new job (from ingest once a panorama or the camera files are stored). */
export const JobSubmitSchema = z.object({
  ...base,
  type: z.literal('job.submit'),
  /** Run the Stitch stage first (edges that upload raw cameras). */
  with_stitch: z.boolean().default(false),
  /** Model version of every stage unless `stage_model_versions` says otherwise. */
  model_version: id.default('default'),
  stage_model_versions: z.partialRecord(stage, id).default({}),
  /** What the stages need: file ids, SE locations, options. Opaque to the orchestrator. */
  input: z.record(z.string(), z.unknown()).default({}),
});

/** Re-run a job from `from_stage` (and everything after it) with a new model version. */
export const JobReprocessSchema = z.object({
  ...base,
  type: z.literal('job.reprocess'),
  from_stage: stage,
  model_version: id,
});

/** Stop dispatching a job and tell workers to abort its tasks. */
export const JobCancelSchema = z.object({
  ...base,
  type: z.literal('job.cancel'),
  reason: z.string().max(1000).default('cancelled by operator'),
});

const stageBase = { ...base, stage, task_id: id, attempt: z.number().int().min(1) };

/** A worker's heartbeat with progress 0–100. */
export const StageProgressSchema = z.object({
  ...stageBase,
  type: z.literal('stage.progress'),
  progress: z.number().min(0).max(100),
});

/** A stage finished; `outputs` are JSON-safe and become the next stages' inputs. */
export const StageCompletedSchema = z.object({
  ...stageBase,
  type: z.literal('stage.completed'),
  outputs: z.record(z.string(), z.unknown()).default({}),
});

/** A stage failed; `retriable` decides between a retry with backoff and failing the job. */
export const StageFailedSchema = z.object({
  ...stageBase,
  type: z.literal('stage.failed'),
  error: z.object({ code: z.string().min(1), message: z.string(), retriable: z.boolean() }),
});

/** Sent by the reconciler when a task is past its deadline without progress. */
export const StageDeadlineExceededSchema = z.object({
  ...stageBase,
  type: z.literal('stage.deadline_exceeded'),
});

export const CommandSchema = z.discriminatedUnion('type', [
  JobSubmitSchema,
  JobReprocessSchema,
  JobCancelSchema,
  StageProgressSchema,
  StageCompletedSchema,
  StageFailedSchema,
  StageDeadlineExceededSchema,
]);

export type Command = z.output<typeof CommandSchema>;
export type CommandInput = z.input<typeof CommandSchema>;
export type JobSubmit = z.output<typeof JobSubmitSchema>;
export type JobReprocess = z.output<typeof JobReprocessSchema>;
export type JobCancel = z.output<typeof JobCancelSchema>;
export type StageProgress = z.output<typeof StageProgressSchema>;
export type StageCompleted = z.output<typeof StageCompletedSchema>;
export type StageFailed = z.output<typeof StageFailedSchema>;
export type StageDeadlineExceeded = z.output<typeof StageDeadlineExceededSchema>;
