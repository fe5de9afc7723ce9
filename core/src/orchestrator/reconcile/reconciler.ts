import type { Logger } from '@polyvision/shared';
import { silentLogger } from '@polyvision/shared';
import type { Database } from '../../db/database.ts';
import { deterministicUuid } from '../../workers/runtime/report-ids.ts';
import type { JobCommandClient } from '../job-command-client.ts';

/** What one reconciler pass did. */
export interface ReconcileReport {
  /** Overdue stage runs reported as `deadline_exceeded` (retried by their owner). */
  overdueStages: number;
  prunedProcessedMessages: number;
  prunedOutboxRows: number;
  prunedClaims: number;
}

/**
 * Finds stage runs past their deadline without progress (a worker died
 * holding the task, a task never arrived) and tells the job's owner:
 * a `stage.failed` with code `deadline_exceeded`, retriable, sent to
 * `polyvision.jobs.commands` with the job's key. The owner's state machine
 * then retries the stage with a new attempt (or fails the job after max
 * attempts), fenced like any other write. The message id is derived from
 * (job, stage, attempt), so several passes report one overdue run once.
 *
 * Also prunes: processed message ids after 7 days (the seeds' TTL of
 * `job:processed`), sent outbox rows after 1 hour, finished claims after 7 days.
 *
 * Runs on one replica only: see `startReconcilerLeadership`.
 */
export class Reconciler {
  readonly #db: Database;
  readonly #client: JobCommandClient;
  readonly #logger: Logger;
  readonly #batchSize: number;

  constructor(options: { db: Database; client: JobCommandClient; logger?: Logger; batchSize?: number }) {
    this.#db = options.db;
    this.#client = options.client;
    this.#logger = options.logger ?? silentLogger;
    this.#batchSize = options.batchSize ?? 500;
  }

  /** One pass. @throws PolyvisionError `db_error` when the database is unreachable. */
  async reconcile(): Promise<ReconcileReport> {
    const overdue = await this.#db.query<{
      job_id: string;
      organization_id: string;
      match_id: string;
      stage: string;
      attempt: number;
    }>(
      `SELECT s.job_id, j.organization_id, j.match_id, s.stage, s.attempt
       FROM job_stages s JOIN jobs j ON j.job_id = s.job_id
       WHERE s.status IN ('dispatched', 'running') AND s.deadline_at < now() AND j.status = 'running'
       ORDER BY s.deadline_at LIMIT $1`,
      [this.#batchSize],
    );
    for (const row of overdue.rows) {
      await this.#client.send({
        type: 'stage.failed',
        message_id: deterministicUuid(`${row.job_id}:${row.stage}:${row.attempt}:deadline_exceeded`),
        job_id: row.job_id,
        organization_id: row.organization_id,
        match_id: row.match_id,
        created_at: new Date().toISOString(),
        stage: row.stage,
        attempt: row.attempt,
        worker_id: 'reconciler',
        error: { code: 'deadline_exceeded', message: 'no progress before the stage deadline', retriable: true },
      });
    }
    const processed = await this.#db.query(
      `DELETE FROM processed_messages WHERE processed_at < now() - interval '7 days'`,
    );
    const outbox = await this.#db.query(`DELETE FROM outbox WHERE sent_at < now() - interval '1 hour'`);
    const claims = await this.#db.query(
      `DELETE FROM stage_claims WHERE status <> 'processing' AND updated_at < now() - interval '7 days'`,
    );
    const report = {
      overdueStages: overdue.rows.length,
      prunedProcessedMessages: processed.rowCount,
      prunedOutboxRows: outbox.rowCount,
      prunedClaims: claims.rowCount,
    };
    if (report.overdueStages > 0) this.#logger.warn(report, 'reconciler: overdue stages reported');
    return report;
  }
}
