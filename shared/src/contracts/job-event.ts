import { z } from 'zod';
import { messageErrorSchema } from './job-messages.ts';
import { isoDateTime, safeId } from './safe-id.ts';
import { stageSchema } from './stages.ts';

/** Job states (the orchestrator's view, also stored in PostgreSQL). */
export const jobStatusSchema = z.enum(['queued', 'running', 'completed', 'failed', 'cancelled']);
export type JobStatus = z.infer<typeof jobStatusSchema>;

/**
 * A change the orchestrator publishes on `polyvision.jobs.events` for live
 * views and webhooks, keyed like the commands.
 */
export const jobEventSchema = z.object({
  type: z.literal('job.event'),
  message_id: z.uuid(),
  job_id: safeId,
  organization_id: safeId,
  match_id: safeId,
  created_at: isoDateTime,
  status: jobStatusSchema,
  /** The stage the event is about, if any. */
  stage: stageSchema.optional(),
  stage_status: z.enum(['pending', 'running', 'completed', 'failed', 'skipped']).optional(),
  /** Overall progress 0..1. */
  progress: z.number().min(0).max(1).optional(),
  error: messageErrorSchema.optional(),
});
export type JobEvent = z.infer<typeof jobEventSchema>;

/** A poison message moved to `polyvision.dlq`, with where it came from and why it failed. */
export const deadLetterSchema = z.object({
  original_topic: z.string().min(1),
  partition: z.number().int().nonnegative(),
  offset: z.string().regex(/^\d+$/),
  /** The original key, UTF-8, or null. */
  key: z.string().nullable(),
  /** The original value, UTF-8 (base64 when `value_encoding` says so). */
  value: z.string(),
  value_encoding: z.enum(['utf8', 'base64']),
  error: messageErrorSchema,
  consumer_group: z.string().min(1),
  failed_at: isoDateTime,
});
export type DeadLetter = z.infer<typeof deadLetterSchema>;
