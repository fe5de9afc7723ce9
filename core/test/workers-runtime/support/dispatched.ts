import type { StageTask } from '@polyvision/shared';
import type { Database } from '../../../src/db/database.ts';

/** Makes `t` the current attempt of a running job in the database (what the orchestrator does when it dispatches). */
export async function dispatched(db: Database, t: StageTask): Promise<StageTask> {
  await db.query(
    `INSERT INTO jobs (job_id, organization_id, match_id, status, stages, commands_partition)
     VALUES ($1, $2, $3, 'running', $4, 0) ON CONFLICT (job_id) DO UPDATE SET status = 'running'`,
    [t.job_id, t.organization_id, t.match_id, [t.stage]],
  );
  await db.query(
    `INSERT INTO job_stages (job_id, stage, status, attempt, max_attempts, model_version, task_message_id)
     VALUES ($1, $2, 'dispatched', $3, 3, $4, $5)
     ON CONFLICT (job_id, stage, segment_index) DO UPDATE SET status = 'dispatched', attempt = EXCLUDED.attempt,
       task_message_id = EXCLUDED.task_message_id`,
    [t.job_id, t.stage, t.attempt, t.model_version, t.message_id],
  );
  return t;
}
