import { z } from 'zod';
import { STAGE_NAMES } from './stages.ts';

/**
 * A task on `polyvision.tasks.<stage>` (key `${organization_id}:${match_id}`),
 * written by the orchestrator's outbox relay and consumed by the stage's
 * workers (group `polyvision-worker-<stage>`). One `task_id` per dispatch:
 * a retry or re-dispatch gets a new one; a redelivery keeps it.
 */
export const StageTaskSchema = z.object({
  type: z.literal('stage.task'),
  task_id: z.string().min(1),
  job_id: z.string().min(1),
  organization_id: z.string().min(1),
  match_id: z.string().min(1),
  stage: z.enum(STAGE_NAMES),
  /** 1 for the first run, +1 per retry or re-dispatch. */
  attempt: z.number().int().min(1),
  model_version: z.string().min(1),
  /** `{stage}:{organization_id}:{match_id}:{model_version}` (seeds). */
  idempotency_key: z.string().min(1),
  /** The job's input (from `job.submit`). */
  input: z.record(z.string(), z.unknown()),
  /** Outputs of the stages this one depends on, by stage name. */
  upstream: z.record(z.string(), z.record(z.string(), z.unknown())),
  /** Milliseconds without progress after which the reconciler re-dispatches the task. */
  deadline_ms: z.number().int().positive(),
});

export type StageTask = z.output<typeof StageTaskSchema>;
