import { type JobStatus, jobStatusSchema, ValidationError } from '@polyvision/shared';
import type { Database } from '../../db/database.ts';
import type { JobRow, StageRow } from './job-rows.ts';
import { type MatchProgress, matchProgress } from './match-progress.ts';
import type { SegmentRow } from './match-rows.ts';

/**
 * Where a stage attempt is, beyond its stored status:
 * - `queued`: dispatched, waiting in its task topic for a worker (schedule-to-start runs);
 * - `waiting`: a retry is scheduled after an error (`waiting_for` says which, `retry_at` when);
 * - `running`: a worker claimed it (start-to-close runs, its heartbeats keep it);
 * - otherwise the stored status (`pending`, `completed`, `failed`, `cancelled`).
 */
export type StagePhase = 'queued' | 'waiting' | 'running' | 'pending' | 'completed' | 'failed' | 'cancelled';

/** A job as the API and the CLI show it. Progress both as a fraction and in percent. */
export interface JobView {
  job_id: string;
  organization_id: string;
  match_id: string;
  status: JobStatus;
  /**
   * `queued` while the job runs but every active stage waits in its queue for
   * a worker, `waiting` while one waits for a retry, otherwise `status`.
   */
  phase: JobStatus | 'queued' | 'waiting';
  progress: number;
  progress_percent: number;
  error: unknown;
  model_versions: Record<string, string>;
  inputs: unknown[];
  created_at: string;
  updated_at: string;
  finished_at: string | null;
  /** `file`: one upload; `match`: a match processed segment by segment (issue #18). */
  kind: 'file' | 'match';
  /** Match jobs: segments received, processed per stage, gaps, lag behind live. Null for a file job. */
  match: MatchProgress | null;
  /**
   * One entry per stage; for a match job one per stage and segment (`segment_index`), in
   * segment order — in lists only the segments' rows that are not completed.
   */
  stages: Array<{
    stage: string;
    /** The match segment of the row; null for a file job. */
    segment_index: number | null;
    status: string;
    phase: StagePhase;
    /** In `waiting`: the error the retry waits out (e.g. `input_unavailable`: a storage element is down). */
    waiting_for: { code: string; message: string; retry_at: string | null; retry_until: string | null } | null;
    /** Milliseconds queued so far (in `queued`), from when the task became visible to workers. */
    queued_ms: number | null;
    attempt: number;
    max_attempts: number;
    model_version: string;
    progress: number;
    worker_id: string | null;
    outputs: unknown[];
    stats: unknown;
    error: unknown;
    dispatched_at: string | null;
    started_at: string | null;
    heartbeat_at: string | null;
    deadline_at: string | null;
    finished_at: string | null;
  }>;
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

function phaseOf(s: StageRow, nowMs: number): StagePhase {
  if (s.status === 'running') return 'running';
  if (s.status !== 'dispatched') return s.status;
  return s.scheduled_at && new Date(s.scheduled_at).getTime() > nowMs ? 'waiting' : 'queued';
}

function orderedRows(job: JobRow, stages: StageRow[], segments: SegmentRow[] | null, brief: boolean): StageRow[] {
  if (job.kind !== 'match') {
    return job.stages.map((name) => stages.find((s) => s.stage === name)).filter((s) => s !== undefined);
  }
  const order = new Map(job.stages.map((s, i) => [s, i]));
  const received = new Set((segments ?? []).filter((g) => g.state === 'received').map((g) => g.segment_index));
  return stages
    .filter((s) => !brief || (s.status !== 'completed' && received.has(s.segment_index)))
    .sort((a, b) => a.segment_index - b.segment_index || order.get(a.stage)! - order.get(b.stage)!);
}

function view(
  job: JobRow,
  stages: StageRow[],
  retryWindowMs: number | null,
  segments: SegmentRow[] | null = null,
  brief = false,
): JobView {
  const nowMs = Date.now();
  const phases = stages.map((s) => phaseOf(s, nowMs));
  const active = phases.filter((p) => p === 'queued' || p === 'waiting' || p === 'running');
  const phase =
    job.status !== 'running' || active.length === 0 || active.includes('running')
      ? job.status
      : active.includes('waiting')
        ? 'waiting'
        : 'queued';
  return {
    job_id: job.job_id,
    organization_id: job.organization_id,
    match_id: job.match_id,
    status: job.status,
    phase,
    progress: job.progress,
    progress_percent: Math.round(job.progress * 1000) / 10,
    error: job.error,
    model_versions: job.model_versions as Record<string, string>,
    inputs: job.inputs,
    created_at: iso(job.created_at)!,
    updated_at: iso(job.updated_at)!,
    finished_at: iso(job.finished_at),
    kind: job.kind ?? 'file',
    match: job.kind === 'match' ? matchProgress(job, segments ?? [], stages) : null,
    stages: orderedRows(job, stages, segments, brief).map((s) => ({
      stage: s.stage,
      segment_index: job.kind === 'match' ? s.segment_index : null,
      status: s.status,
      phase: phaseOf(s, nowMs),
      waiting_for:
        phaseOf(s, nowMs) === 'waiting' && s.error
          ? {
              code: s.error.code,
              message: s.error.message,
              retry_at: iso(s.scheduled_at),
              retry_until:
                retryWindowMs !== null && s.run_started_at
                  ? new Date(new Date(s.run_started_at).getTime() + retryWindowMs).toISOString()
                  : null,
            }
          : null,
      queued_ms:
        phaseOf(s, nowMs) === 'queued'
          ? Math.max(0, nowMs - new Date(s.scheduled_at ?? s.dispatched_at ?? nowMs).getTime())
          : null,
      attempt: s.attempt,
      max_attempts: s.max_attempts,
      model_version: s.model_version,
      progress: s.progress,
      worker_id: s.worker_id,
      outputs: s.outputs,
      stats: s.stats,
      error: s.error,
      dispatched_at: iso(s.dispatched_at),
      started_at: iso(s.started_at),
      heartbeat_at: iso(s.heartbeat_at),
      deadline_at: iso(s.deadline_at),
      finished_at: iso(s.finished_at),
    })),
  };
}

/**
 * A job with its stages, or null. Reads only: any replica answers for any job.
 *
 * @param retryWindowMs - the orchestrator's retry window of waiting errors (for `waiting_for.retry_until`).
 */
export async function getJob(
  db: Database,
  jobId: string,
  retryWindowMs: number | null = null,
): Promise<JobView | null> {
  const job = await db.query<JobRow>(`SELECT * FROM jobs WHERE job_id = $1`, [jobId]);
  if (!job.rows[0]) return null;
  const stages = await db.query<StageRow>(`SELECT * FROM job_stages WHERE job_id = $1`, [jobId]);
  const segments =
    job.rows[0].kind === 'match'
      ? (await db.query<SegmentRow>(`SELECT * FROM job_segments WHERE job_id = $1`, [jobId])).rows
      : null;
  return view(job.rows[0], stages.rows, retryWindowMs, segments);
}

export interface JobListFilter {
  status?: JobStatus;
  organization_id?: string;
  match_id?: string;
  /** 1–200. @defaultValue 50 */
  limit?: number;
  /** The `next_cursor` of the previous page. */
  cursor?: string;
}

/**
 * Jobs, newest first, filtered; keyset pagination on (created_at, job_id).
 *
 * @throws ValidationError `invalid_filter` for a bad status, limit or cursor.
 */
export async function listJobs(
  db: Database,
  filter: JobListFilter,
  retryWindowMs: number | null = null,
): Promise<{ jobs: JobView[]; next_cursor: string | null }> {
  const limit = filter.limit ?? 50;
  if (!Number.isInteger(limit) || limit < 1 || limit > 200) {
    throw new ValidationError('invalid_filter', 'limit must be an integer from 1 to 200');
  }
  if (filter.status !== undefined && !jobStatusSchema.safeParse(filter.status).success) {
    throw new ValidationError('invalid_filter', `status must be one of ${jobStatusSchema.options.join(', ')}`);
  }
  const where: string[] = [];
  const params: unknown[] = [];
  const add = (sql: string, value: unknown) => {
    params.push(value);
    where.push(sql.replace('?', `$${params.length}`));
  };
  if (filter.status) add('status = ?', filter.status);
  if (filter.organization_id) add('organization_id = ?', filter.organization_id);
  if (filter.match_id) add('match_id = ?', filter.match_id);
  if (filter.cursor) {
    // Cursor: `${created_at in µs since the epoch}|${job_id}` (microseconds: PostgreSQL's precision).
    const [createdUs, jobId] = Buffer.from(filter.cursor, 'base64url').toString('utf8').split('|');
    if (!createdUs || !jobId || !/^\d{1,19}$/.test(createdUs)) {
      throw new ValidationError('invalid_filter', 'cursor is not one this API returned');
    }
    params.push(createdUs, jobId);
    where.push(
      `(created_at, job_id) < ('epoch'::timestamptz + $${params.length - 1}::bigint * interval '1 microsecond', $${params.length})`,
    );
  }
  params.push(limit + 1);
  const jobs = await db.query<JobRow & { created_us: string }>(
    `SELECT *, (extract(epoch FROM created_at) * 1000000)::bigint AS created_us FROM jobs ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
     ORDER BY created_at DESC, job_id DESC LIMIT $${params.length}`,
    params,
  );
  const page = jobs.rows.slice(0, limit);
  const stages = page.length
    ? await db.query<StageRow>(`SELECT * FROM job_stages WHERE job_id = ANY($1::text[])`, [page.map((j) => j.job_id)])
    : { rows: [] };
  const matchIds = page.filter((j) => j.kind === 'match').map((j) => j.job_id);
  const segments = matchIds.length
    ? (await db.query<SegmentRow>(`SELECT * FROM job_segments WHERE job_id = ANY($1::text[])`, [matchIds])).rows
    : [];
  const last = page[page.length - 1];
  return {
    jobs: page.map((job) =>
      view(
        job,
        stages.rows.filter((s) => s.job_id === job.job_id),
        retryWindowMs,
        job.kind === 'match' ? segments.filter((g) => g.job_id === job.job_id) : null,
        true,
      ),
    ),
    next_cursor:
      jobs.rows.length > limit && last ? Buffer.from(`${last.created_us}|${last.job_id}`).toString('base64url') : null,
  };
}
