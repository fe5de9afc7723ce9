/**
 * A match as one job, recorded in real time (issue #18): segments arrive one
 * per segment length (what ingest sends for the edge's uploads:
 * `match.segment`, then the end marker's `match.end`), 2 workers run
 * sleeping test stages (`core/src/testing/segment-stage.ts`), each worker
 * one task at a time. Real Kafka and PostgreSQL; the orchestrator in process.
 *
 * Measures, from PostgreSQL timestamps:
 * - time from the last segment's upload to the match `completed`, in
 *   segments' processing time (W = the sum of one segment's stage sleeps);
 * - live lag: from a segment's upload to its encode completed (it is in the
 *   EVENT playlist), in segment lengths, p50 / p95 / max;
 * - baseline in the same run: a one-segment match (upload → completed), the floor.
 *
 * `node bench/orchestrator/match-live.ts [--segments 30 --segment-s 2 --workers 2
 *   --sleeps detect=800,track=300,vcam=400,analyze=200,encode=300]`
 * Writes bench/results/orchestrator-match-live-<segment-s>s.json.
 */
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { ensureSegmentRunsTable, segmentStage } from '../../core/src/testing/segment-stage.ts';
import { PgStageClaimStore } from '../../core/src/workers/runtime/stage-claims.ts';
import type { StageHandler } from '../../core/src/workers/runtime/stage-handler.ts';
import { WorkerRuntime } from '../../core/src/workers/runtime/worker-runtime.ts';
import { PANORAMA } from '../../core/test/orchestrator/support/harness.ts';
import { STAGES, type Stage } from '../../shared/src/index.ts';
import { benchWorld, summarize, writeResult } from './world.ts';

const { values } = parseArgs({
  options: {
    segments: { type: 'string', default: '30' },
    'segment-s': { type: 'string', default: '2' },
    workers: { type: 'string', default: '2' },
    sleeps: { type: 'string', default: 'detect=800,track=300,vcam=400,analyze=200,encode=300' },
  },
});
const segments = Number(values.segments);
const segmentS = Number(values['segment-s']);
const workerCount = Number(values.workers);
const sleeps = Object.fromEntries(
  values.sleeps.split(',').map((pair) => {
    const [stage, ms] = pair.split('=');
    return [stage as Stage, Number(ms)];
  }),
) as Partial<Record<Stage, number>>;
const stages: Stage[] = (STAGES as readonly Stage[]).filter((s) => sleeps[s] !== undefined);
const workMs = stages.reduce((t: number, s: Stage) => t + sleeps[s]!, 0);

/** Nearest-rank quantile. */
function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
}

/** One task at a time per worker (a worker is one CPU's worth of stage work). */
function oneAtATime(handlers: StageHandler[]): StageHandler[] {
  let queue: Promise<unknown> = Promise.resolve();
  return handlers.map((h) => ({
    stage: h.stage,
    run(context) {
      const run = queue.then(() => h.run(context));
      queue = run.catch(() => {});
      return run;
    },
  }));
}

const loadBefore = loadavg();
const world = await benchWorld({ sessionTimeoutMs: 10_000 });
const h = world.harness;
await ensureSegmentRunsTable(h.db);
await h.startOrchestrator({ relayPollIntervalMs: 20 });
for (let i = 0; i < workerCount; i++) {
  const worker = new WorkerRuntime({
    bus: h.bus,
    claims: new PgStageClaimStore(h.db),
    handlers: oneAtATime(stages.map((s) => segmentStage(s, { db: h.db, sleepMs: sleeps[s]! }, `w${i}`))),
    topicPrefix: h.prefix,
    sessionTimeoutMs: 10_000,
    progressIntervalMs: 1_000,
    concurrency: 4,
  });
  h.workers.push(worker);
  await worker.start();
}

async function finishedAt(jobId: string): Promise<number | null> {
  const r = await h.db.query<{ status: string; finished_at: Date | null }>(
    `SELECT status, finished_at FROM jobs WHERE job_id = $1`,
    [jobId],
  );
  return r.rows[0]?.status === 'completed' ? r.rows[0].finished_at!.getTime() : null;
}
async function waitCompleted(jobId: string): Promise<number> {
  for (;;) {
    const at = await finishedAt(jobId);
    if (at !== null) return at;
    await sleep(50);
  }
}

/** Records a match in real time: one segment per `segmentS`, then the end marker. */
async function record(matchId: string, count: number) {
  const sentAt: number[] = [];
  const start = Date.now();
  let jobId = '';
  for (let k = 0; k < count; k++) {
    const due = start + (k + 1) * segmentS * 1000; // segment k is uploaded once it is recorded
    await sleep(Math.max(0, due - Date.now()));
    sentAt.push(Date.now());
    jobId = await h.client.segment({
      organization_id: 'bench',
      match_id: matchId,
      slot: 1_000 + k,
      duration_s: segmentS,
      input: { ...PANORAMA, object_key: `bench/${matchId}/${k}.mp4` },
      stages,
    });
  }
  await h.client.end({ job_id: jobId, organization_id: 'bench', match_id: matchId }, 'marker', 1_000 + count - 1);
  const completedAt = await waitCompleted(jobId);
  const encodes = await h.db.query<{ segment_index: number; finished_at: Date }>(
    `SELECT segment_index, finished_at FROM job_stages WHERE job_id = $1 AND stage = $2 ORDER BY segment_index`,
    [jobId, stages[stages.length - 1]],
  );
  const lagSegments = encodes.rows.map((r) => (r.finished_at.getTime() - sentAt[r.segment_index]!) / (segmentS * 1000));
  return { jobId, afterLastMs: completedAt - sentAt[count - 1]!, lagSegments };
}

// Warm-up (topics, consumer groups), then the baseline: one segment alone.
await record('warmup', 1);
const single = await record('single', 1);
const live = await record('live', segments);
const lag = summarize(live.lagSegments);
const runs = await h.db.query<{ n: string }>(`SELECT count(*) AS n FROM test_segment_runs WHERE job_id = $1`, [
  live.jobId,
]);
const result = {
  measured_at: new Date().toISOString(),
  load_average_before: loadBefore.map((l) => Math.round(l * 100) / 100),
  load_average_after: loadavg().map((l) => Math.round(l * 100) / 100),
  segments,
  segment_s: segmentS,
  workers: workerCount,
  sleeps_ms: sleeps,
  segment_work_ms: workMs,
  stage_runs: Number(runs.rows[0]!.n),
  baseline_one_segment_upload_to_completed_ms: single.afterLastMs,
  last_upload_to_completed_ms: live.afterLastMs,
  last_upload_to_completed_in_segment_work: Math.round((live.afterLastMs / workMs) * 100) / 100,
  last_upload_to_completed_vs_baseline: Math.round((live.afterLastMs / single.afterLastMs) * 100) / 100,
  live_lag_segments: {
    p50: Math.round(lag.p50 * 100) / 100,
    p95: Math.round(quantile(live.lagSegments, 0.95) * 100) / 100,
    max: Math.round(lag.max * 100) / 100,
  },
};
await writeResult(`orchestrator-match-live-${segmentS}s`, result);
await world.close();
process.exit(0);
