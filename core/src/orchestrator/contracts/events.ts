import type { StageName } from './stages.ts';

/**
 * Events on `polyvision.jobs.events` (key `${organization_id}:${match_id}`),
 * for live views, webhooks and workers (which abort tasks of cancelled jobs).
 */
export type JobEventType =
  | 'job.created'
  | 'job.progress'
  | 'job.completed'
  | 'job.failed'
  | 'job.cancelled'
  | 'job.reprocessing'
  | 'stage.dispatched'
  | 'stage.retry_scheduled'
  | 'stage.completed'
  | 'stage.failed';

export interface JobEvent {
  type: JobEventType;
  job_id: string;
  organization_id: string;
  match_id: string;
  /** Job progress 0–100. */
  progress: number;
  status: string;
  stage?: StageName;
  attempt?: number;
  error?: { code: string; message: string };
  /** ISO 8601. */
  at: string;
}
