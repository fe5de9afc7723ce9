import type { MessageError, StageTask } from '@polyvision/shared';
import type { Database } from '../../db/database.ts';
import { segmentFolder } from '../segment/segment-output-key.ts';
import type { StageResult } from './stage-handler.ts';

/** What a claim attempt found. */
export type ClaimResult =
  | { state: 'claimed' }
  /** Already done: re-send the stored result. */
  | { state: 'completed'; result: StageResult }
  /** Already reported as failed. */
  | { state: 'failed'; error: MessageError }
  /** Another live worker holds it. */
  | { state: 'busy'; owner: string }
  /**
   * Its holder stopped heartbeating (lease ran out): this call marked the
   * claim `lost`; the caller reports `heartbeat_timeout` and the orchestrator
   * dispatches a new attempt (a re-run is a new attempt with its own claim).
   */
  | { state: 'lost'; owner: string }
  /**
   * The database no longer wants this task: the job is not running, or the
   * stage has moved to another attempt. Dropped without a report.
   */
  | { state: 'stale' };

/**
 * Worker-side claims of tasks, by task `message_id` (one per dispatch).
 *
 * The one rule the worker and the reconciler share: a task runs only while
 * the database says it is the current attempt of a running job (so a
 * worker remembers nothing about jobs: reprocess and cancel work on any
 * worker at any time), and only under a live claim. The claim's lease is
 * the heartbeat: renewed every third of it while the task runs; a claim
 * whose lease ran out is lost, and its attempt is re-dispatched as a new one.
 */
export interface StageClaimStore {
  claim(task: StageTask, owner: string, leaseMs: number): Promise<ClaimResult>;
  /** Extends the lease; false when the claim is no longer this owner's or the task is no longer current. */
  renew(task: StageTask, owner: string, leaseMs: number): Promise<boolean>;
  complete(task: StageTask, owner: string, result: StageResult): Promise<void>;
  fail(task: StageTask, owner: string, error: MessageError): Promise<void>;
  /** Gives the claim up (shutdown, cancel) so the task may run elsewhere. */
  release(task: StageTask, owner: string): Promise<void>;
}

/**
 * The key of a task's stage run in the seeds' format (`params.idempotency_key` or rebuilt):
 * `{stage}:{org}:{match}:{model_version}`, plus `:segment-00000k` for a segment of a match job
 * (idempotent per match, segment, stage and model version; issue #18).
 */
export function taskIdempotencyKey(task: StageTask): string {
  const fromParams = task.params.idempotency_key;
  if (typeof fromParams === 'string') return fromParams;
  const key = `${task.stage}:${task.organization_id}:${task.match_id}:${task.model_version}`;
  return task.segment ? `${key}:${segmentFolder(task.segment.index)}` : key;
}

/**
 * SQL condition: the task (message id, job id, stage: the numbered
 * parameters given) is the current attempt of a running job — the
 * orchestrator's rows, the final word.
 */
const currentTask = (messageId: string, jobId: string, stage: string) =>
  `EXISTS (SELECT 1 FROM job_stages s JOIN jobs j ON j.job_id = s.job_id
    WHERE s.job_id = ${jobId} AND s.stage = ${stage} AND s.task_message_id = ${messageId}::uuid
      AND s.status IN ('dispatched', 'running') AND j.status = 'running')`;

/** Claims in PostgreSQL (`stage_claims`), the final word. */
export class PgStageClaimStore implements StageClaimStore {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  async claim(task: StageTask, owner: string, leaseMs: number): Promise<ClaimResult> {
    const taken = await this.#db.query(
      `INSERT INTO stage_claims (task_message_id, idempotency_key, job_id, stage, attempt, status, owner, lease_until, claimed_at)
       SELECT $1, $2, $3, $4, $5, 'processing', $6, now() + ($7::double precision * interval '1 millisecond'), now()
       WHERE ${currentTask('$1', '$3', '$4')}
       ON CONFLICT (task_message_id) DO UPDATE
         SET lease_until = EXCLUDED.lease_until, updated_at = now()
         WHERE stage_claims.status = 'processing' AND stage_claims.owner = EXCLUDED.owner
       RETURNING status`,
      [task.message_id, taskIdempotencyKey(task), task.job_id, task.stage, task.attempt, owner, leaseMs],
    );
    if (taken.rowCount > 0) return { state: 'claimed' };
    const existing = await this.#db.query<{ status: string; owner: string; result: unknown; expired: boolean }>(
      `SELECT status, owner, result, lease_until < now() AS expired FROM stage_claims WHERE task_message_id = $1`,
      [task.message_id],
    );
    const row = existing.rows[0];
    if (!row) return { state: 'stale' };
    if (row.status === 'completed') return { state: 'completed', result: row.result as StageResult };
    if (row.status === 'failed') return { state: 'failed', error: row.result as MessageError };
    if (row.status === 'lost') return { state: 'lost', owner: row.owner };
    if (!row.expired) return { state: 'busy', owner: row.owner };
    const lost = await this.#db.query(
      `UPDATE stage_claims SET status = 'lost', updated_at = now()
       WHERE task_message_id = $1 AND status = 'processing' AND lease_until < now()`,
      [task.message_id],
    );
    return lost.rowCount > 0 ? { state: 'lost', owner: row.owner } : this.claim(task, owner, leaseMs);
  }

  async renew(task: StageTask, owner: string, leaseMs: number): Promise<boolean> {
    const result = await this.#db.query(
      `UPDATE stage_claims SET lease_until = now() + ($3::double precision * interval '1 millisecond'), updated_at = now()
       WHERE task_message_id = $1 AND owner = $2 AND status = 'processing'
         AND ${currentTask('$1', '$4', '$5')}`,
      [task.message_id, owner, leaseMs, task.job_id, task.stage],
    );
    return result.rowCount > 0;
  }

  async complete(task: StageTask, owner: string, result: StageResult): Promise<void> {
    await this.#finish(task, owner, 'completed', result);
  }

  async fail(task: StageTask, owner: string, error: MessageError): Promise<void> {
    await this.#finish(task, owner, 'failed', error);
  }

  async release(task: StageTask, owner: string): Promise<void> {
    await this.#db.query(
      `DELETE FROM stage_claims WHERE task_message_id = $1 AND owner = $2 AND status = 'processing'`,
      [task.message_id, owner],
    );
  }

  async #finish(task: StageTask, owner: string, status: string, result: unknown) {
    await this.#db.query(
      `UPDATE stage_claims SET status = $3, result = $4::jsonb, updated_at = now()
       WHERE task_message_id = $1 AND owner = $2 AND status = 'processing'`,
      [task.message_id, owner, status, JSON.stringify(result)],
    );
  }
}
