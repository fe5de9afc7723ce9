import { createHash } from 'node:crypto';
import pg from 'pg';
import type { ChaosCluster } from './cluster.ts';

/** One stage of a job that ran more than once, as the database recorded it. */
export interface StageRerun {
  job_id: string;
  stage: string;
  /** `job_stages.attempt`: the attempt that finished the stage. */
  attempt: number;
  /** Its claims in attempt order: `attempt:status:owner`. */
  claims: string[];
}

/** What the database and the storage elements say about a set of jobs. */
export interface Census {
  jobs: number;
  completed: number;
  failed: number;
  /** Neither completed nor failed nor cancelled (queued or running). */
  unfinished: number;
  /** `job_id: code message` of each failed job. */
  failures: string[];
  /** Catalogued files of these jobs' matches (inputs and stage outputs) read back from their SE. */
  filesChecked: number;
  /** Not readable from the SE the catalog names (`storage_id/object_key: status`). */
  filesMissing: string[];
  /** Read back with a SHA-256 other than the catalog's. */
  filesCorrupt: string[];
  /** (job, stage) pairs with more than one completed claim: a stage that ran to the end twice. */
  stagesCompletedTwice: string[];
  /** Stages that ran more than once (several claims, or a final attempt above 1). */
  reruns: StageRerun[];
  /**
   * Re-runs NOT recorded as a new attempt: two claims of the same attempt, or
   * a stage whose finishing attempt has no claim of its own number.
   */
  rerunsNotRecorded: string[];
  /** Submit (job created) → ready (job finished), per completed job, in milliseconds, ascending. */
  submitToReadyMs: number[];
}

/** A pool on the chaos cluster's database and schema that survives PostgreSQL restarts. Close it with `end()`. */
export function censusPool(cluster: ChaosCluster): pg.Pool {
  const pool = new pg.Pool({
    connectionString: cluster.state.services.DATABASE_URL,
    options: `-c search_path=${cluster.state.databaseSchema}`,
    max: 2,
  });
  pool.on('error', () => {}); // an idle client cut by a PostgreSQL restart: the next query reconnects
  return pool;
}

/** The p-th percentile (0..100, nearest rank) of ascending values, or null. */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? null;
}

/**
 * Counts from PostgreSQL (jobs, job_stages, stage_claims, files) and from the
 * storage elements (every catalogued file of the jobs' matches is read back
 * and hashed) what a fault did to `jobIds`.
 */
export async function takeCensus(cluster: ChaosCluster, db: pg.Pool, jobIds: readonly string[]): Promise<Census> {
  const jobs = await db.query<{
    job_id: string;
    status: string;
    match_id: string;
    error: { code?: string; message?: string } | null;
    ready_ms: number | null;
  }>(
    `SELECT job_id, status, match_id, error,
       (extract(epoch FROM finished_at - created_at) * 1000)::double precision AS ready_ms
     FROM jobs WHERE job_id = ANY($1)`,
    [jobIds],
  );
  const rows = jobs.rows;
  const claims = await db.query<{ job_id: string; stage: string; attempt: number; status: string; owner: string }>(
    `SELECT job_id, stage, attempt, status, owner FROM stage_claims WHERE job_id = ANY($1) ORDER BY claimed_at`,
    [jobIds],
  );
  const stages = await db.query<{ job_id: string; stage: string; attempt: number; run_first_attempt: number }>(
    `SELECT job_id, stage, attempt, run_first_attempt FROM job_stages WHERE job_id = ANY($1)`,
    [jobIds],
  );
  const claimsOf = new Map<string, typeof claims.rows>();
  for (const c of claims.rows) {
    const key = `${c.job_id}/${c.stage}`;
    claimsOf.set(key, [...(claimsOf.get(key) ?? []), c]);
  }
  const stagesCompletedTwice: string[] = [];
  const reruns: StageRerun[] = [];
  const rerunsNotRecorded: string[] = [];
  for (const s of stages.rows) {
    const key = `${s.job_id}/${s.stage}`;
    const list = (claimsOf.get(key) ?? []).sort((a, b) => a.attempt - b.attempt);
    if (list.filter((c) => c.status === 'completed').length > 1) stagesCompletedTwice.push(key);
    if (list.length > 1 || s.attempt > s.run_first_attempt) {
      reruns.push({
        job_id: s.job_id,
        stage: s.stage,
        attempt: s.attempt,
        claims: list.map((c) => `${c.attempt}:${c.status}:${c.owner}`),
      });
    }
    const attempts = list.map((c) => c.attempt);
    if (new Set(attempts).size !== attempts.length) rerunsNotRecorded.push(`${key}: two claims of one attempt`);
  }

  const files = await db.query<{ storage_id: string; object_key: string; sha256: string }>(
    `SELECT storage_id, object_key, sha256 FROM files
     WHERE job_id = ANY($1) OR (kind = 'panorama' AND match_id = ANY($2))`,
    [jobIds, rows.map((r) => r.match_id)],
  );
  const ses = new Map(cluster.state.processes.filter((p) => p.role === 'storage-element').map((p) => [p.name, p.url]));
  const filesMissing: string[] = [];
  const filesCorrupt: string[] = [];
  for (const f of files.rows) {
    const where = `${f.storage_id}/${f.object_key}`;
    const response = await fetch(`${ses.get(f.storage_id)}/api/v1/files/${f.object_key}`, {
      headers: { authorization: `Bearer ${cluster.state.storageToken}` },
    }).catch((error: unknown) => ({ status: 0, error }) as const);
    if (!('ok' in response) || response.status !== 200) {
      filesMissing.push(`${where}: ${response.status}`);
      continue;
    }
    const sha = createHash('sha256')
      .update(Buffer.from(await response.arrayBuffer()))
      .digest('hex');
    if (sha !== f.sha256) filesCorrupt.push(`${where}: ${sha} ≠ ${f.sha256}`);
  }

  return {
    jobs: jobIds.length,
    completed: rows.filter((r) => r.status === 'completed').length,
    failed: rows.filter((r) => r.status === 'failed').length,
    unfinished: jobIds.length - rows.filter((r) => ['completed', 'failed', 'cancelled'].includes(r.status)).length,
    failures: rows
      .filter((r) => r.status === 'failed')
      .map((r) => `${r.job_id}: ${r.error?.code ?? '?'} ${r.error?.message ?? ''}`.slice(0, 300)),
    filesChecked: files.rows.length,
    filesMissing,
    filesCorrupt,
    stagesCompletedTwice,
    reruns,
    rerunsNotRecorded,
    submitToReadyMs: rows
      .filter((r) => r.status === 'completed' && r.ready_ms !== null)
      .map((r) => Math.round(Number(r.ready_ms)))
      .sort((a, b) => a - b),
  };
}
