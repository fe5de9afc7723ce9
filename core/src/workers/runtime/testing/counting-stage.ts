import { setTimeout as sleep } from 'node:timers/promises';
import { PolyvisionError, type Stage } from '@polyvision/shared';
import type { Database } from '../../../db/database.ts';
import type { StageHandler } from '../stage-handler.ts';

/**
 * TEST DOUBLE — not a real stage. Sleeps, reports progress, and records
 * every execution in `test_stage_executions` (PostgreSQL or PGlite), so
 * tests and benchmarks count from the database how often each stage of
 * each job really ran.
 */
export interface CountingStageOptions {
  db: Database;
  /** How long one execution sleeps. @defaultValue 50 */
  sleepMs?: number;
  /** Fail the first N attempts of a job's stage with a retriable error (keyed `${job_id}:${stage}`). */
  failFirstAttempts?: (jobId: string, stage: Stage) => number;
  /** Fail with a non-retriable error when it returns true. */
  failPermanently?: (jobId: string, stage: Stage) => boolean;
  /** Fail with this error (code, retriable flag) when it returns one, e.g. `input_unavailable` while an SE is down. */
  failWith?: (jobId: string, stage: Stage, attempt: number) => { code: string; retriable: boolean } | null;
}

/** Creates the executions table (idempotent). */
export async function ensureExecutionsTable(db: Database): Promise<void> {
  await db.exec(
    `CREATE TABLE IF NOT EXISTS test_stage_executions (
       id bigserial PRIMARY KEY,
       task_message_id uuid NOT NULL,
       job_id text NOT NULL,
       stage text NOT NULL,
       attempt integer NOT NULL,
       model_version text NOT NULL,
       worker_id text NOT NULL,
       started_at timestamptz NOT NULL DEFAULT now()
     )`,
  );
}

/** A counting test stage for `stage`. */
export function countingStage(stage: Stage, options: CountingStageOptions): StageHandler {
  const sleepMs = options.sleepMs ?? 50;
  return {
    stage,
    async run({ task, signal, reportProgress }) {
      await options.db.query(
        `INSERT INTO test_stage_executions (task_message_id, job_id, stage, attempt, model_version, worker_id)
         VALUES ($1, $2, $3, $4, $5, $6)`,
        [task.message_id, task.job_id, task.stage, task.attempt, task.model_version, process.pid.toString()],
      );
      reportProgress(0.1);
      await sleep(sleepMs / 2, undefined, { signal });
      reportProgress(0.5);
      await sleep(sleepMs / 2, undefined, { signal });
      if (options.failPermanently?.(task.job_id, stage)) {
        throw new PolyvisionError('test_permanent_failure', `${stage} fails for good (test double)`, {
          retriable: false,
        });
      }
      const failure = options.failWith?.(task.job_id, stage, task.attempt);
      if (failure) {
        throw new PolyvisionError(failure.code, `${stage} attempt ${task.attempt}: ${failure.code} (test double)`, {
          retriable: failure.retriable,
        });
      }
      if (task.attempt <= (options.failFirstAttempts?.(task.job_id, stage) ?? 0)) {
        throw new PolyvisionError('test_transient_failure', `${stage} attempt ${task.attempt} fails (test double)`, {
          retriable: true,
        });
      }
      return { outputs: [], stats: { slept_ms: sleepMs, attempt: task.attempt } };
    },
  };
}

/** Executions per `job_id:stage` (the count tests assert on). */
export async function countExecutions(db: Database, jobIds?: string[]): Promise<Map<string, number>> {
  const result = await db.query<{ job_id: string; stage: string; n: string }>(
    `SELECT job_id, stage, count(*) AS n FROM test_stage_executions
     ${jobIds ? 'WHERE job_id = ANY($1::text[])' : ''} GROUP BY job_id, stage`,
    jobIds ? [jobIds] : [],
  );
  return new Map(result.rows.map((r) => [`${r.job_id}:${r.stage}`, Number(r.n)]));
}
