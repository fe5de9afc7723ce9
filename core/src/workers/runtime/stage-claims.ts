import type { MessageError, StageTask } from '@polyvision/shared';
import type { Database } from '../../db/database.ts';
import type { StageResult } from './stage-handler.ts';

/** What a claim attempt found. */
export type ClaimResult =
  | { state: 'claimed' }
  /** Already done: re-send the stored result. */
  | { state: 'completed'; result: StageResult }
  /** Already reported as failed. */
  | { state: 'failed'; error: MessageError }
  /** Another live worker holds it. */
  | { state: 'busy'; owner: string };

/**
 * Worker-side claims of tasks, by task `message_id` (one per dispatch): a
 * redelivered task runs only if nobody completed it and nobody live holds
 * it. The lease is renewed while the task runs; a dead worker's claim
 * expires and the task may run again.
 */
export interface StageClaimStore {
  claim(task: StageTask, owner: string, leaseMs: number): Promise<ClaimResult>;
  /** Extends the lease; false when the claim is no longer this owner's. */
  renew(task: StageTask, owner: string, leaseMs: number): Promise<boolean>;
  complete(task: StageTask, owner: string, result: StageResult): Promise<void>;
  fail(task: StageTask, owner: string, error: MessageError): Promise<void>;
  /** Gives the claim up (shutdown, cancel) so the task may run elsewhere. */
  release(task: StageTask, owner: string): Promise<void>;
}

/** The key of a task's stage run in the seeds' format (`params.idempotency_key` or rebuilt). */
export function taskIdempotencyKey(task: StageTask): string {
  const fromParams = task.params.idempotency_key;
  return typeof fromParams === 'string'
    ? fromParams
    : `${task.stage}:${task.organization_id}:${task.match_id}:${task.model_version}`;
}

/** Claims in PostgreSQL (`stage_claims`), the final word. */
export class PgStageClaimStore implements StageClaimStore {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  async claim(task: StageTask, owner: string, leaseMs: number): Promise<ClaimResult> {
    const taken = await this.#db.query(
      `INSERT INTO stage_claims (task_message_id, idempotency_key, job_id, stage, attempt, status, owner, lease_until)
       VALUES ($1, $2, $3, $4, $5, 'processing', $6, now() + ($7::double precision * interval '1 millisecond'))
       ON CONFLICT (task_message_id) DO UPDATE
         SET owner = EXCLUDED.owner, lease_until = EXCLUDED.lease_until, updated_at = now()
         WHERE stage_claims.status = 'processing'
           AND (stage_claims.lease_until < now() OR stage_claims.owner = EXCLUDED.owner)
       RETURNING status`,
      [task.message_id, taskIdempotencyKey(task), task.job_id, task.stage, task.attempt, owner, leaseMs],
    );
    if (taken.rowCount > 0) return { state: 'claimed' };
    const existing = await this.#db.query<{ status: string; owner: string; result: unknown }>(
      `SELECT status, owner, result FROM stage_claims WHERE task_message_id = $1`,
      [task.message_id],
    );
    const row = existing.rows[0];
    if (!row) return this.claim(task, owner, leaseMs);
    if (row.status === 'completed') return { state: 'completed', result: row.result as StageResult };
    if (row.status === 'failed') return { state: 'failed', error: row.result as MessageError };
    return { state: 'busy', owner: row.owner };
  }

  async renew(task: StageTask, owner: string, leaseMs: number): Promise<boolean> {
    const result = await this.#db.query(
      `UPDATE stage_claims SET lease_until = now() + ($3::double precision * interval '1 millisecond'), updated_at = now()
       WHERE task_message_id = $1 AND owner = $2 AND status = 'processing'`,
      [task.message_id, owner, leaseMs],
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
