import { STAGES } from '@polyvision/shared';
import type { Database } from '../db/index.ts';
import { listJobs } from '../orchestrator/state/job-queries.ts';
import type { MatchProgress } from '../orchestrator/state/match-progress.ts';

/** Per-stage counts of the jobs panel. */
export interface StageCounts {
  stage: string;
  /** Stages of live jobs waiting for a worker or for their turn (`pending`, `dispatched`). */
  queued: number;
  running: number;
  /** Failed stage runs of jobs created in the last 24 h. */
  failed: number;
  /** Completed stage runs of jobs created in the last 24 h. */
  completed: number;
}

/** A job as the panel lists it. */
export interface JobLine {
  job_id: string;
  organization_id: string;
  match_id: string;
  status: string;
  progress_percent: number;
  /** The stage running now (or the first not finished), if any. */
  current_stage: string | null;
  /** For a match job: its unfinished stage rows (at most 20), each with its segment. */
  stages: Array<{ stage: string; status: string; progress_percent: number; segment_index: number | null }>;
  /** A match job's progress (segments received, processed per stage, lag behind live, gaps); null for a file job. */
  match: MatchProgress | null;
  updated_at: string;
}

/** A commands partition an orchestrator replica was assigned but cannot claim (issue #20 item 4). */
export interface ClaimProblem {
  topic: string;
  partition: number;
  /** The replica that cannot claim it. */
  owner: string;
  failures: number;
  /** ISO 8601: the first failed claim. */
  since: string;
  /** The last claim's error. */
  error: string;
}

/** How long a claim problem row counts without a refresh (the replica retries at least every 30 s). */
const CLAIM_PROBLEM_FRESH_S = 120;

/** The jobs panel: counts per stage, the newest jobs, and partitions no replica can claim. */
export interface JobsSummary {
  stages: StageCounts[];
  latest: JobLine[];
  /** Refreshed within the last 2 minutes; a replica that died leaves its rows to age out. */
  claim_problems: ClaimProblem[];
}

/**
 * Reads the jobs panel from the orchestrator's tables (`jobs`,
 * `job_stages`, migration 0002), read-only: one aggregate query (stages in
 * pipeline order) and the
 * orchestrator's own {@link listJobs} for the newest `latestCount` jobs, and the
 * fresh rows of `partition_claim_problems` (migration 0009).
 *
 * @throws the database error (the caller shows it instead of the panel).
 */
export async function readJobsSummary(db: Database, latestCount: number): Promise<JobsSummary> {
  const counts = await db.query<{ stage: string; queued: string; running: string; failed: string; completed: string }>(
    `SELECT s.stage,
            count(*) FILTER (WHERE s.status IN ('pending', 'dispatched') AND j.status IN ('queued', 'running')) AS queued,
            count(*) FILTER (WHERE s.status = 'running' AND j.status IN ('queued', 'running')) AS running,
            count(*) FILTER (WHERE s.status = 'failed' AND j.created_at > now() - interval '24 hours') AS failed,
            count(*) FILTER (WHERE s.status = 'completed' AND j.created_at > now() - interval '24 hours') AS completed
       FROM job_stages s JOIN jobs j ON j.job_id = s.job_id
      WHERE j.status IN ('queued', 'running') OR j.created_at > now() - interval '24 hours'
      GROUP BY s.stage
      ORDER BY array_position($1::text[], s.stage), s.stage`,
    [[...STAGES]],
  );
  const { jobs } = await listJobs(db, { limit: latestCount });
  const problems = await db.query<{
    topic: string;
    partition: number;
    owner: string;
    failures: number;
    since: Date | string;
    error: string;
  }>(
    `SELECT topic, partition, owner, failures, since, error FROM partition_claim_problems
      WHERE updated_at > now() - make_interval(secs => $1) ORDER BY topic, partition, owner`,
    [CLAIM_PROBLEM_FRESH_S],
  );
  return {
    claim_problems: problems.rows.map((r) => ({
      topic: r.topic,
      partition: r.partition,
      owner: r.owner,
      failures: r.failures,
      since: new Date(r.since).toISOString(),
      error: r.error,
    })),
    stages: counts.rows.map((r) => ({
      stage: r.stage,
      queued: Number(r.queued),
      running: Number(r.running),
      failed: Number(r.failed),
      completed: Number(r.completed),
    })),
    latest: jobs.map((job) => {
      const current =
        job.stages.find((s) => s.status === 'running') ??
        job.stages.find((s) => s.status !== 'completed' && s.status !== 'cancelled');
      return {
        job_id: job.job_id,
        organization_id: job.organization_id,
        match_id: job.match_id,
        status: job.status,
        progress_percent: job.progress_percent,
        current_stage: job.status === 'queued' || job.status === 'running' ? (current?.stage ?? null) : null,
        stages: job.stages.slice(0, 20).map((s) => ({
          stage: s.stage,
          status: s.status,
          progress_percent: Math.round(s.progress * 1000) / 10,
          segment_index: s.segment_index,
        })),
        match: job.match,
        updated_at: job.updated_at,
      };
    }),
  };
}
