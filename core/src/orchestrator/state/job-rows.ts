import type { ArtifactRef, JobStatus, MessageError, Stage } from '@polyvision/shared';
import type { Queryable } from '../../db/database.ts';

/** Stage statuses stored in `job_stages.status`. */
export type StageStatus = 'pending' | 'dispatched' | 'running' | 'completed' | 'failed' | 'cancelled';

export interface JobRow {
  job_id: string;
  organization_id: string;
  match_id: string;
  status: JobStatus;
  stages: Stage[];
  model_versions: Partial<Record<Stage, string>>;
  inputs: ArtifactRef[];
  priority: string;
  requested_by: string | null;
  progress: number;
  error: (MessageError & { stage?: Stage }) | null;
  commands_partition: number;
  /** `file`: one upload, whole-file stages; `match`: a match processed segment by segment. */
  kind: 'file' | 'match';
  /** Match jobs: the edge slot of the segment that opened the job (index = slot − base_slot). */
  base_slot: string | number | null;
  /** Match jobs: index of the last segment, once the end of the match is known. */
  final_index: number | null;
  ended_by: 'marker' | 'operator' | 'idle_grace' | null;
  ended_at: Date | null;
  last_segment_at: Date | null;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
}

export interface StageRow {
  job_id: string;
  stage: Stage;
  /** The match segment of the row; -1 for a whole-file job. */
  segment_index: number;
  status: StageStatus;
  attempt: number;
  run_first_attempt: number;
  max_attempts: number;
  model_version: string;
  progress: number;
  task_message_id: string | null;
  worker_id: string | null;
  outputs: ArtifactRef[];
  stats: Record<string, number> | null;
  error: MessageError | null;
  dispatched_at: Date | null;
  /** Match jobs: the current run was dispatched as the match's last segment (`segment.final`). */
  dispatched_final: boolean;
  started_at: Date | null;
  heartbeat_at: Date | null;
  /** Schedule-to-start deadline while dispatched; start-to-close deadline while running. */
  deadline_at: Date | null;
  finished_at: Date | null;
  /** When the task becomes visible to workers (dispatch + retry delay). */
  scheduled_at: Date | null;
  /** First dispatch of the current run (the retry window of waiting errors counts from here). */
  run_started_at: Date | null;
  /** Attempts of this run that ended in a waiting error (not counted against `max_attempts`). */
  waiting_attempts: number;
}

/** The job row, locked for update (the transaction owns the job until it ends). */
export async function lockJob(tx: Queryable, jobId: string): Promise<JobRow | null> {
  const result = await tx.query<JobRow>(`SELECT * FROM jobs WHERE job_id = $1 FOR UPDATE`, [jobId]);
  return result.rows[0] ?? null;
}

/** A job's stage rows, in the job's pipeline order. */
export async function loadStages(tx: Queryable, job: Pick<JobRow, 'job_id' | 'stages'>): Promise<StageRow[]> {
  const result = await tx.query<StageRow>(`SELECT * FROM job_stages WHERE job_id = $1`, [job.job_id]);
  return job.stages.map((stage) => result.rows.find((row) => row.stage === stage)).filter((r) => r !== undefined);
}

/** Job progress 0..1: the mean of its stages' progress (a completed stage counts 1). */
export function jobProgress(stages: readonly StageRow[]): number {
  if (stages.length === 0) return 0;
  const sum = stages.reduce(
    (total, s) => total + (s.status === 'completed' ? 1 : Math.min(1, Math.max(0, s.progress))),
    0,
  );
  return Math.round((sum / stages.length) * 10_000) / 10_000;
}

/**
 * Makes a stage row pending again for a new run (a reprocess; for a match job also an analyze/encode
 * that must run again as the match's final segment; whole-file rows have segment −1): outputs, error and clocks cleared; its next
 * dispatch is attempt `attempt + 1`, the first of the new run.
 */
export async function resetStageRow(tx: Queryable, row: StageRow, modelVersion: string): Promise<void> {
  await tx.query(
    `UPDATE job_stages SET status = 'pending', progress = 0, outputs = '[]', stats = NULL, error = NULL,
       run_first_attempt = attempt + 1, model_version = $4, task_message_id = NULL, worker_id = NULL,
       dispatched_at = NULL, dispatched_final = false, started_at = NULL, heartbeat_at = NULL, deadline_at = NULL,
       finished_at = NULL, scheduled_at = NULL, run_started_at = NULL, waiting_attempts = 0
     WHERE job_id = $1 AND stage = $2 AND segment_index = $3`,
    [row.job_id, row.stage, row.segment_index, modelVersion],
  );
  Object.assign(row, {
    status: 'pending',
    progress: 0,
    outputs: [],
    error: null,
    model_version: modelVersion,
    run_started_at: null,
    waiting_attempts: 0,
    task_message_id: null,
    run_first_attempt: row.attempt + 1,
    dispatched_final: false,
  });
}
