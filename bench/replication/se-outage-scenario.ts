/**
 * One storage element down during real jobs (issue 19, "one SE down 10
 * minutes"): a local cluster (`pnpm polyvision cluster` pieces: 3 SEs in 3
 * datacenters, 2 orchestrators, 2 ingest, 1 worker on the REAL stages), a
 * synthetic panorama uploaded with tus once per job; after the first upload
 * is confirmed (both copies verified) the SE holding its primary copy is
 * frozen with SIGSTOP (a hung SE: it accepts connections and never answers),
 * the remaining uploads go in during the outage, the SE is resumed after
 * `outageMs` (or once every job finished, when `outageMs` is 0), and the
 * scenario waits for the repairer to bring every catalogued file of the run
 * back to 2 verified copies.
 *
 * Used by deploy/test/se-outage.test.ts (short) and bench/replication/se-outage.ts (600 s).
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { createDatabase } from '../../core/src/db/index.ts';
import { type ClusterOptions, type ClusterState, clusterDown, clusterUp } from '../../deploy/src/cluster/index.ts';
import { repoRoot } from '../../deploy/src/services/paths.ts';

const run = promisify(execFile);

/** Options of {@link runSeOutage}. */
export interface SeOutageOptions {
  cluster: Partial<ClusterOptions> & { workDir: string; databaseSchema: string };
  /** Jobs (panorama uploads); the first before the outage, the others during it. */
  jobs: number;
  /** How long the SE stays frozen, ms; 0: until every job finished. */
  outageMs: number;
  /** Longest wait for the jobs, ms. */
  jobsTimeoutMs: number;
  /** Longest wait for 2 verified copies of every file after the SE is back, ms. */
  repairTimeoutMs: number;
  /** Copies the cluster's ingest requires (its REPLICATION_FACTOR, 3 datacenters). @defaultValue 2 */
  requiredCopies?: number;
  /** Synthetic panorama length, s. @defaultValue 3 */
  clipDurationS?: number;
  log?: (line: string) => void;
}

/** What {@link runSeOutage} measured. */
export interface SeOutageResult {
  victim: string;
  outage_ms: number;
  jobs: number;
  jobs_completed: number;
  jobs_failed: number;
  /** Job ids that did not complete, with their stage states. */
  not_completed: Array<{ job_id: string; status: string; stages: Array<[string, string]> }>;
  /** Catalogued files of the run (panoramas and every stage output). */
  files: number;
  /** Of those, files with at least 2 verified copies in 2 datacenters at the end. */
  files_with_2_verified_copies: number;
  /** Copies the repairer made on the third SE while the victim was lost. */
  copies_made_during_outage: number;
  /** Time from the SIGSTOP until every job had finished (or the wait timed out), ms. */
  jobs_finished_after_sigstop_ms: number | null;
  /** Worker log lines saying a read fell back from one copy to the next. */
  fallback_reads: number;
  /** Time from SIGCONT until every file had 2 verified copies, ms (null: not reached). */
  repaired_after_resume_ms: number | null;
  wall_ms: number;
}

function metadata(fields: Record<string, string>): string {
  return Object.entries(fields)
    .map(([key, value]) => `${key} ${Buffer.from(value).toString('base64')}`)
    .join(',');
}

async function poll<T>(what: string, timeoutMs: number, fn: () => Promise<T | undefined>): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 1_000));
  }
}

/** Uploads `body` as a panorama of a new match; returns the job id and the copies header of the last answer. */
async function upload(state: ClusterState, ingestUrl: string, body: Buffer, matchId: string) {
  const sha256 = createHash('sha256').update(body).digest('hex');
  const auth = { authorization: `Bearer ${state.edgeToken}`, 'tus-resumable': '1.0.0' };
  const created = await fetch(`${ingestUrl}/api/v1/uploads`, {
    method: 'POST',
    headers: {
      ...auth,
      'upload-length': String(body.length),
      'upload-metadata': metadata({
        organization_id: state.organizationId,
        match_id: matchId,
        kind: 'panorama',
        filename: 'panorama.mp4',
        sha256,
      }),
    },
  });
  if (created.status !== 201) throw new Error(`create: ${created.status} ${await created.text()}`);
  const location = created.headers.get('location') as string;
  const patched = await fetch(new URL(location, `${ingestUrl}/api/v1/uploads/`), {
    method: 'PATCH',
    headers: { ...auth, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
    body,
  });
  if (patched.status !== 204) throw new Error(`patch: ${patched.status} ${await patched.text()}`);
  return { jobId: `job-${location.split('/').at(-1)}`, copies: patched.headers.get('polyvision-copies') };
}

/** Runs the scenario (see the file comment). The cluster is always stopped and the SE resumed at the end. */
export async function runSeOutage(o: SeOutageOptions): Promise<SeOutageResult> {
  const log = o.log ?? (() => {});
  const started = Date.now();
  const db = createDatabase({ databaseUrl: process.env.DATABASE_URL, schema: o.cluster.databaseSchema });
  let victimPid: number | null = null;
  try {
    const { state } = await clusterUp({ ...o.cluster, testStages: false, edge: false });
    log(`cluster up in ${Date.now() - started} ms`);
    const clip = path.join(o.cluster.workDir, 'synthetic');
    await run(process.execPath, [
      path.join(repoRoot, 'deploy', 'src', 'cli', 'main.ts'),
      ...['synth-match', '--out', clip, '--cameras', '3', '--duration', String(o.clipDurationS ?? 3), '--fps', '10'],
      ...['--width', '640', '--height', '360', '--panorama', '--quiet'],
    ]);
    const body = await readFile(path.join(clip, 'panorama.mp4'));
    const ingest = state.processes.filter((p) => p.role === 'ingest');
    const ses = state.processes.filter((p) => p.role === 'storage-element');
    const orchestrator = state.processes.find((p) => p.role === 'orchestrator');
    const runId = `outage-${Date.now().toString(36)}`;

    const first = await upload(state, ingest[0]?.url as string, body, `${runId}-0`);
    const required = o.requiredCopies ?? 2;
    if (first.copies !== `${required}/${required}`) {
      throw new Error(`the first upload was confirmed with ${first.copies} copies, not ${required}/${required}`);
    }
    const { rows: primary } = await db.query<{ storage_id: string }>(
      `SELECT storage_id FROM files WHERE file_id = (SELECT file_id FROM uploads WHERE upload_id = $1)`,
      [first.jobId.slice('job-'.length)],
    );
    const victim = ses.find((s) => s.name === primary[0]?.storage_id) ?? (ses[0] as (typeof ses)[number]);
    process.kill(victim.pid, 'SIGSTOP');
    victimPid = victim.pid;
    const stoppedAt = Date.now();
    log(`SIGSTOP ${victim.name} (primary of the first panorama)`);

    // The SE comes back after outageMs even while jobs still wait for it (a baseline without copies does).
    let resumedAt = 0;
    let outageMs = 0;
    let during = 0;
    let resuming: Promise<void> | null = null;
    const resume = () => {
      resuming ??= resumeOnce();
      return resuming;
    };
    const resumeOnce = async () => {
      if (victimPid === null) return;
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM file_copies c JOIN files f ON f.file_id = c.file_id
         WHERE c.state = 'verified' AND c.created_at >= to_timestamp($1 / 1000.0)
           AND c.storage_id <> f.storage_id AND f.created_at < to_timestamp($1 / 1000.0)`,
        [stoppedAt],
      );
      during = rows[0]?.n ?? 0;
      process.kill(victim.pid, 'SIGCONT');
      victimPid = null;
      outageMs = Date.now() - stoppedAt;
      resumedAt = Date.now();
      log(`SIGCONT ${victim.name} after ${outageMs} ms`);
    };
    const timer =
      o.outageMs > 0 ? setTimeout(() => void resume().catch((e: Error) => log(e.message)), o.outageMs) : undefined;

    const jobIds = [first.jobId];
    for (let i = 1; i < o.jobs; i++) {
      const replica = ingest[i % ingest.length]?.url as string;
      jobIds.push((await upload(state, replica, body, `${runId}-${i}`)).jobId);
      log(`upload ${i + 1}/${o.jobs} during the outage`);
    }

    type Job = { job_id: string; status: string; stages: Array<{ stage: string; status: string }> };
    let jobsFinishedMs: number | null = null;
    const jobs = await poll('every job finished', o.jobsTimeoutMs, async () => {
      const all: Job[] = [];
      for (const id of jobIds) {
        const response = await fetch(`${orchestrator?.url}/api/v1/jobs/${id}`, {
          headers: { authorization: `Bearer ${state.edgeToken}` },
        });
        if (response.status !== 200) return undefined;
        all.push((await response.json()) as Job);
      }
      return all.every((j) => j.status === 'completed' || j.status === 'failed') ? all : undefined;
    }).catch(async (error: Error) => {
      log(error.message);
      return [] as Job[];
    });
    jobsFinishedMs = Date.now() - stoppedAt;
    log(`jobs finished ${jobsFinishedMs} ms after the SIGSTOP`);
    if (o.outageMs > 0) {
      const left = stoppedAt + o.outageMs - Date.now();
      if (left > 0) await new Promise((r) => setTimeout(r, left + 50));
    }
    clearTimeout(timer);
    await resume();

    const runFiles = `SELECT f.file_id, (SELECT count(DISTINCT c.storage_id)::int FROM file_copies c
                       WHERE c.file_id = f.file_id AND c.state = 'verified') AS verified
                     FROM files f WHERE f.match_id LIKE $1`;
    let repairedMs: number | null = null;
    if (required >= 2)
      await poll('2 verified copies of every file', o.repairTimeoutMs, async () => {
        const { rows } = await db.query<{ verified: number }>(runFiles, [`${runId}-%`]);
        return rows.length > 0 && rows.every((r) => r.verified >= 2) ? true : undefined;
      })
        .then(() => {
          repairedMs = Date.now() - resumedAt;
        })
        .catch((error: Error) => log(error.message));
    const { rows: files } = await db.query<{ verified: number }>(runFiles, [`${runId}-%`]);
    const completed = jobs.filter((j) => j.status === 'completed').length;
    let fallbackReads = 0;
    for (const worker of state.processes.filter((p) => p.role === 'worker')) {
      const text = await readFile(path.join(o.cluster.workDir, worker.name, `${worker.name}.log`), 'utf8').catch(
        () => '',
      );
      fallbackReads += text.split('\n').filter((l) => l.includes('trying the next copy')).length;
    }
    return {
      victim: victim.name,
      outage_ms: outageMs,
      jobs: jobIds.length,
      jobs_completed: completed,
      jobs_failed: jobs.filter((j) => j.status === 'failed').length,
      not_completed: jobs
        .filter((j) => j.status !== 'completed')
        .map((j) => ({ job_id: j.job_id, status: j.status, stages: j.stages.map((s) => [s.stage, s.status]) })),
      files: files.length,
      files_with_2_verified_copies: files.filter((r) => r.verified >= 2).length,
      copies_made_during_outage: during,
      jobs_finished_after_sigstop_ms: jobsFinishedMs,
      fallback_reads: fallbackReads,
      repaired_after_resume_ms: repairedMs,
      wall_ms: Date.now() - started,
    };
  } finally {
    if (victimPid !== null) {
      try {
        process.kill(victimPid, 'SIGCONT');
      } catch {}
    }
    await clusterDown(o.cluster, { purge: true }).catch(() => {});
    await db.close();
  }
}
