import type pg from 'pg';
import { waitFor } from '../support/wait-for.ts';

/** A stage of a job as the orchestrator's tables say now. */
export interface StageRow {
  stage: string;
  status: string;
  attempt: number;
  worker_id: string | null;
}

/**
 * Waits until a stage of `jobId` is `running` (claimed by a worker, its
 * start-to-close clock started) and returns it; `stage` picks one, else any;
 * `attemptAbove` waits for a later attempt (a re-dispatch).
 *
 * @throws Error from waitFor when it does not happen within `timeoutMs`.
 */
export async function runningStage(
  db: pg.Pool,
  jobId: string,
  { stage, attemptAbove = 0, timeoutMs = 180_000 }: { stage?: string; attemptAbove?: number; timeoutMs?: number } = {},
): Promise<StageRow & { worker_id: string }> {
  return waitFor(
    async () => {
      const { rows } = await db.query<StageRow>(
        `SELECT stage, status, attempt, worker_id FROM job_stages
         WHERE job_id = $1 AND status = 'running' AND worker_id IS NOT NULL AND ($2::text IS NULL OR stage = $2)
           AND attempt > $3
         ORDER BY started_at LIMIT 1`,
        [jobId, stage ?? null, attemptAbove],
      );
      return rows[0] as (StageRow & { worker_id: string }) | undefined;
    },
    { timeoutMs, intervalMs: 100, message: `a running ${stage ?? ''} stage of ${jobId}` },
  );
}

/** Waits until the job is completed, failed or cancelled; returns its status. */
export async function finished(db: pg.Pool, jobId: string, timeoutMs = 600_000): Promise<string> {
  return waitFor(
    async () => {
      const { rows } = await db.query<{ status: string }>(`SELECT status FROM jobs WHERE job_id = $1`, [jobId]);
      const status = rows[0]?.status;
      return status === 'completed' || status === 'failed' || status === 'cancelled' ? status : undefined;
    },
    { timeoutMs, intervalMs: 250, message: `job ${jobId} to finish` },
  );
}

/** Waits until the job exists in the database (ingest's outbox reached the orchestrator). */
export async function created(db: pg.Pool, jobId: string): Promise<void> {
  await waitFor(async () => ((await db.query(`SELECT 1 FROM jobs WHERE job_id = $1`, [jobId])).rowCount ?? 0) > 0, {
    intervalMs: 100,
    message: `job ${jobId} in the database`,
  });
}

/** The orchestrator instance that owns the commands partition of `jobId` (fencing table), or null. */
export async function partitionOwner(db: pg.Pool, jobId: string): Promise<string | null> {
  const { rows } = await db.query<{ owner: string }>(
    `SELECT p.owner FROM partition_owners p JOIN jobs j ON p.partition = j.commands_partition
     WHERE j.job_id = $1 AND p.topic LIKE '%jobs.commands' ORDER BY p.claimed_at DESC LIMIT 1`,
    [jobId],
  );
  return rows[0]?.owner ?? null;
}

/** The storage element that holds the job's input panorama. */
export async function inputStorage(db: pg.Pool, jobId: string): Promise<string> {
  const { rows } = await db.query<{ inputs: unknown }>(`SELECT inputs FROM jobs WHERE job_id = $1`, [jobId]);
  // The column may hold the array itself or its JSON text, depending on the driver that wrote it.
  const raw = rows[0]?.inputs;
  const inputs = (typeof raw === 'string' ? JSON.parse(raw) : raw) as Array<{ storage_id?: string }> | undefined;
  const id = inputs?.[0]?.storage_id;
  if (!id) throw new Error(`job ${jobId} has no input (${JSON.stringify(raw)})`);
  return id;
}
