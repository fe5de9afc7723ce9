import type { Logger } from '@polyvision/shared';
import { silentLogger } from '@polyvision/shared';
import type { Database } from '../../db/database.ts';
import { deterministicUuid, lostAttemptMessageId } from '../../workers/runtime/report-ids.ts';
import type { JobCommandClient } from '../job-command-client.ts';

const TIMEOUT_MESSAGES: Record<StageTimeoutCode, string> = {
  heartbeat_timeout: 'the worker stopped heartbeating (its claim lease ran out); the attempt is lost',
  start_to_close_timeout: "the attempt ran longer than the stage's start-to-close timeout",
  schedule_to_start_timeout: "no worker claimed the task within the stage's schedule-to-start timeout",
};

/** What one reconciler pass did. */
export interface ReconcileReport {
  /** Stage attempts reported lost or timed out (retried by their owner), by code. */
  overdueStages: number;
  overdueByCode: Partial<Record<StageTimeoutCode, number>>;
  /**
   * Running attempts whose worker still heartbeats (claim alive) but whose
   * progress has not moved for longer than `stallAfterMs`: flagged (logged,
   * counted), not failed — start-to-close bounds them.
   */
  stalledStages: Array<{ job_id: string; stage: string; attempt: number; silentMs: number }>;
  prunedProcessedMessages: number;
  prunedOutboxRows: number;
  prunedClaims: number;
  /** Match jobs closed because no segment came for the idle grace (`match.end`, reason `idle_grace`). */
  idleMatchesClosed: string[];
}

/**
 * Why the reconciler ends a stage attempt (Temporal's activity timeouts):
 * - `heartbeat_timeout`: the worker's claim lease ran out (it stopped
 *   renewing it: died, hung, lost the database). The same rule makes another
 *   worker that meets the task refuse to run it and report the same thing.
 * - `start_to_close_timeout`: claimed longer ago than the stage's start-to-close.
 * - `schedule_to_start_timeout`: no worker claimed it within schedule-to-start
 *   (generous: a backlog is not a failure).
 */
export type StageTimeoutCode = 'heartbeat_timeout' | 'start_to_close_timeout' | 'schedule_to_start_timeout';

/**
 * Finds stage attempts that will not finish by themselves and tells the
 * job's owner: a `stage.failed` (retriable, code a {@link StageTimeoutCode})
 * sent to `polyvision.jobs.commands` with the job's key. The owner's state
 * machine then retries the stage with a new attempt (or fails the job after
 * max attempts), fenced like any other write. Message ids are derived from
 * the task, so several passes report one attempt once.
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
  readonly #stallAfterMs: number;
  readonly #matchIdleGraceMs: number;

  /**
   * @param options.stallAfterMs - a running attempt without a progress report for this long is flagged. @defaultValue 600_000
   * @param options.matchIdleGraceMs - a running match job without a new segment for this long is closed
   *   (`match.end`, reason `idle_grace`) when its end marker never came or segments are still missing
   *   (`ORCHESTRATOR_MATCH_IDLE_GRACE_MS`). @defaultValue 1_800_000 (30 min)
   */
  constructor(options: {
    db: Database;
    client: JobCommandClient;
    logger?: Logger;
    batchSize?: number;
    stallAfterMs?: number;
    matchIdleGraceMs?: number;
  }) {
    this.#db = options.db;
    this.#client = options.client;
    this.#logger = options.logger ?? silentLogger;
    this.#batchSize = options.batchSize ?? 500;
    this.#stallAfterMs = options.stallAfterMs ?? 600_000;
    this.#matchIdleGraceMs = options.matchIdleGraceMs ?? 30 * 60_000;
  }

  /** One pass. @throws PolyvisionError `db_error` when the database is unreachable. */
  async reconcile(): Promise<ReconcileReport> {
    // Claims whose lease ran out are lost (the same atomic step a worker takes when it meets
    // one): from here their holder's renewals fail and it stops.
    await this.#db.query(
      `UPDATE stage_claims c SET status = 'lost', updated_at = now()
       FROM job_stages s
       WHERE c.status = 'processing' AND c.lease_until < now()
         AND s.task_message_id = c.task_message_id AND s.status IN ('dispatched', 'running')`,
    );
    // A claim that is completed or failed has its report on the way: left alone.
    const overdue = await this.#db.query<{
      job_id: string;
      organization_id: string;
      match_id: string;
      stage: string;
      attempt: number;
      task_message_id: string;
      code: StageTimeoutCode;
    }>(
      `SELECT s.job_id, j.organization_id, j.match_id, s.stage, s.attempt, s.task_message_id::text AS task_message_id,
         CASE WHEN c.status = 'lost' THEN 'heartbeat_timeout'
              WHEN s.status = 'running' THEN 'start_to_close_timeout'
              ELSE 'schedule_to_start_timeout' END AS code
       FROM job_stages s JOIN jobs j ON j.job_id = s.job_id
       LEFT JOIN stage_claims c ON c.task_message_id = s.task_message_id
       WHERE j.status = 'running' AND s.status IN ('dispatched', 'running') AND (
         c.status = 'lost'
         OR (s.status = 'running' AND s.deadline_at < now() AND (c.status IS NULL OR c.status = 'processing'))
         OR (s.status = 'dispatched' AND c.status IS NULL AND s.deadline_at < now())
       )
       ORDER BY s.deadline_at LIMIT $1`,
      [this.#batchSize],
    );
    const byCode: Partial<Record<StageTimeoutCode, number>> = {};
    for (const row of overdue.rows) {
      byCode[row.code] = (byCode[row.code] ?? 0) + 1;
      await this.#client.send({
        type: 'stage.failed',
        message_id:
          row.code === 'heartbeat_timeout'
            ? lostAttemptMessageId(row.task_message_id)
            : deterministicUuid(`${row.task_message_id}:${row.code}`),
        job_id: row.job_id,
        organization_id: row.organization_id,
        match_id: row.match_id,
        created_at: new Date().toISOString(),
        stage: row.stage,
        attempt: row.attempt,
        worker_id: 'reconciler',
        task_message_id: row.task_message_id,
        error: { code: row.code, message: TIMEOUT_MESSAGES[row.code], retriable: true },
      });
    }
    const stalled = await this.#db.query<{ job_id: string; stage: string; attempt: number; silent_ms: number }>(
      `SELECT s.job_id, s.stage, s.attempt,
         (extract(epoch FROM now() - COALESCE(s.heartbeat_at, s.started_at)) * 1000)::double precision AS silent_ms
       FROM job_stages s JOIN jobs j ON j.job_id = s.job_id
       JOIN stage_claims c ON c.task_message_id = s.task_message_id AND c.status = 'processing'
       WHERE j.status = 'running' AND s.status = 'running'
         AND COALESCE(s.heartbeat_at, s.started_at) < now() - ($1::double precision * interval '1 millisecond')
       ORDER BY 4 DESC LIMIT $2`,
      [this.#stallAfterMs, this.#batchSize],
    );
    const stalledStages = stalled.rows.map((r) => ({
      job_id: r.job_id,
      stage: r.stage,
      attempt: r.attempt,
      silentMs: Math.round(Number(r.silent_ms)),
    }));
    if (stalledStages.length > 0) {
      this.#logger.warn({ stalled: stalledStages.slice(0, 20) }, 'reconciler: running stages without progress');
    }
    const idleMatchesClosed = await this.#closeIdleMatches();
    const processed = await this.#db.query(
      `DELETE FROM processed_messages WHERE processed_at < now() - interval '7 days'`,
    );
    const outbox = await this.#db.query(`DELETE FROM outbox WHERE sent_at < now() - interval '1 hour'`);
    const claims = await this.#db.query(
      `DELETE FROM stage_claims WHERE status <> 'processing' AND updated_at < now() - interval '7 days'`,
    );
    const report = {
      overdueStages: overdue.rows.length,
      overdueByCode: byCode,
      stalledStages,
      prunedProcessedMessages: processed.rowCount,
      prunedOutboxRows: outbox.rowCount,
      prunedClaims: claims.rowCount,
      idleMatchesClosed,
    };
    if (report.overdueStages > 0) this.#logger.warn(report, 'reconciler: overdue stages reported');
    return report;
  }

  /**
   * Sends `match.end` (reason `idle_grace`) for running match jobs whose
   * newest segment is older than the idle grace and whose end is unknown or
   * who still miss segments: the owner closes the match, giving the missing
   * segments up. One message id per job and newest segment, so repeated
   * passes close it once.
   */
  async #closeIdleMatches(): Promise<string[]> {
    const idle = await this.#db.query<{
      job_id: string;
      organization_id: string;
      match_id: string;
      last_segment_us: string;
    }>(
      `SELECT j.job_id, j.organization_id, j.match_id,
         (extract(epoch FROM j.last_segment_at) * 1000000)::bigint::text AS last_segment_us
       FROM jobs j
       WHERE j.kind = 'match' AND j.status = 'running'
         AND j.last_segment_at < now() - ($1::double precision * interval '1 millisecond')
         AND (j.final_index IS NULL OR (SELECT count(*) FROM job_segments g
               WHERE g.job_id = j.job_id AND g.segment_index <= j.final_index) < j.final_index + 1)
       ORDER BY j.last_segment_at LIMIT $2`,
      [this.#matchIdleGraceMs, this.#batchSize],
    );
    for (const row of idle.rows) {
      await this.#client.send({
        type: 'match.end',
        message_id: deterministicUuid(`${row.job_id}:idle_grace:${row.last_segment_us}`),
        job_id: row.job_id,
        organization_id: row.organization_id,
        match_id: row.match_id,
        created_at: new Date().toISOString(),
        reason: 'idle_grace',
        requested_by: 'reconciler',
      });
      this.#logger.warn(
        { job: row.job_id, match: row.match_id, graceMs: this.#matchIdleGraceMs },
        'reconciler: match idle past its grace without its end or with segments missing; closing it',
      );
    }
    return idle.rows.map((r) => r.job_id);
  }
}
