import { randomUUID } from 'node:crypto';
import {
  type ArtifactRef,
  carryKind,
  jobKey,
  type Stage,
  type StageTask,
  stageIdempotencyKey,
} from '@polyvision/shared';
import type { Queryable } from '../../db/database.ts';
import { dependenciesOf } from '../contracts/stages.ts';
import type { TopicNames } from '../contracts/topics.ts';
import type { OrchestratorTuning } from '../options.ts';
import type { OutboxMessage } from '../outbox/outbox-writer.ts';
import type { JobRow, StageRow } from './job-rows.ts';
import { type MatchState, segmentStates } from './match-rows.ts';
import { isSequential, lastSegmentInMatch, previousReceived } from './segment-plan.ts';

/** The Redis/claim idempotency key of one stage run on one segment: `{stage}:{org}:{match}:{model}:segment-{k}`. */
export function segmentIdempotencyKey(job: JobRow, stage: Stage, modelVersion: string, index: number): string {
  return `${stageIdempotencyKey(stage, job.organization_id, job.match_id, modelVersion)}:segment-${index}`;
}

/**
 * Starts the next attempt of `row` (one stage on one segment of a match job):
 * a new task id, the row `dispatched` (schedule-to-start runs), and the task
 * (with its `segment`, and for a sequential stage the previous received
 * segment's carry among its inputs) in the outbox after `delayMs`.
 */
export async function dispatchSegmentTask(
  tuning: OrchestratorTuning,
  topics: TopicNames,
  tx: Queryable,
  state: MatchState,
  row: StageRow,
  effects: OutboxMessage[],
  delayMs: number,
): Promise<void> {
  const { job } = state;
  const attempt = row.attempt + 1;
  const messageId = randomUUID();
  const final = lastSegmentInMatch(segmentStates(state), job.final_index) === row.segment_index;
  const deadlineMs = delayMs + tuning.scheduleToStartMs[job.priority === 'high' ? 'high' : 'normal'];
  await tx.query(
    `UPDATE job_stages SET status = 'dispatched', attempt = $4, task_message_id = $5, progress = 0,
       dispatched_at = now(), dispatched_final = $8,
       scheduled_at = now() + ($7::double precision * interval '1 millisecond'),
       run_started_at = COALESCE(run_started_at, now()),
       deadline_at = now() + ($6::double precision * interval '1 millisecond'),
       started_at = NULL, heartbeat_at = NULL, worker_id = NULL
     WHERE job_id = $1 AND stage = $2 AND segment_index = $3`,
    [job.job_id, row.stage, row.segment_index, attempt, messageId, deadlineMs, delayMs, final],
  );
  Object.assign(row, {
    status: 'dispatched',
    attempt,
    task_message_id: messageId,
    progress: 0,
    dispatched_final: final,
  });
  row.run_started_at ??= new Date();
  const segment = state.segments.get(row.segment_index)!;
  const task: StageTask = {
    type: 'stage.task',
    message_id: messageId,
    job_id: job.job_id,
    organization_id: job.organization_id,
    match_id: job.match_id,
    created_at: new Date().toISOString(),
    stage: row.stage,
    attempt,
    model_version: row.model_version,
    inputs: inputsOf(state, row),
    params: {
      idempotency_key: segmentIdempotencyKey(job, row.stage, row.model_version, row.segment_index),
      ...(row.stage === 'detect' ? matchPersonHeight(state, row.model_version) : {}),
    },
    segment: {
      index: row.segment_index,
      start_s: segment.start_s ?? 0,
      duration_s: segment.duration_s ?? 1,
      final,
      ...(isSequential(row.stage) ? carryFromOf(state, row.segment_index, segment.start_s ?? 0) : {}),
    },
  };
  effects.push({
    topic: topics.tasks(row.stage),
    // Keyed by segment too: a match's segments spread over the task partitions, so every worker
    // of a stage takes some (the orchestrator, not the partition, keeps the sequential stages in order).
    key: `${jobKey(job.organization_id, job.match_id)}:${row.segment_index}`,
    payload: task as unknown as Record<string, unknown>,
    delayMs,
  });
}

/** The segment's panorama, the match's inputs, upstream outputs on the segment, and the carry of a sequential stage. */
function inputsOf(state: MatchState, row: StageRow): ArtifactRef[] {
  const k = row.segment_index;
  const upstream = new Set<Stage>();
  const visit = (s: Stage) => {
    for (const dep of dependenciesOf(s, state.job.stages)) {
      if (!upstream.has(dep)) {
        upstream.add(dep);
        visit(dep);
      }
    }
  };
  visit(row.stage);
  const inputs: ArtifactRef[] = [];
  const panorama = state.segments.get(k)?.input;
  if (panorama) inputs.push(panorama);
  inputs.push(...state.job.inputs);
  for (const r of state.rows) if (r.segment_index === k && upstream.has(r.stage)) inputs.push(...r.outputs);
  if (isSequential(row.stage)) {
    const previous = previousReceived(segmentStates(state), k);
    const carry =
      previous == null ? undefined : state.rows.find((r) => r.stage === row.stage && r.segment_index === previous);
    inputs.push(...(carry?.outputs ?? []).filter((o) => o.kind === carryKind(row.stage)));
  }
  return inputs.slice(0, 256);
}

/**
 * Where a sequential stage's task on segment `index` continues from: the previous segment still in
 * the match, and the match-clock seconds left out between its end and `startS` (segments missing,
 * cancelled or failed).
 */
function carryFromOf(state: MatchState, index: number, startS: number): { carry_from: number | null; gap_s: number } {
  const previous = previousReceived(segmentStates(state), index) ?? null;
  if (previous === null) return { carry_from: null, gap_s: 0 };
  const before = state.segments.get(previous);
  const endS = (before?.start_s ?? 0) + (before?.duration_s ?? 0);
  return { carry_from: previous, gap_s: Math.max(0, Math.round((startS - endS) * 1000) / 1000) };
}

/**
 * The person height (source px) a match's detect tasks plan their tiles for once one of its segments
 * measured it: the median of the `person_height_px` its completed detect runs (same model) report.
 * A segment given it skips detect's first pass (4 frames decoded by seeking and inferred at the
 * native scale) and every segment keeps one tile plan, so detections do not change scale from one
 * segment to the next. Nothing yet measured (the first segments, in parallel): none, each measures.
 */
export function matchPersonHeight(state: MatchState, modelVersion: string): { person_height_px?: number } {
  const heights = state.rows
    .filter((r) => r.stage === 'detect' && r.status === 'completed' && r.model_version === modelVersion)
    .map((r) => r.stats?.person_height_px)
    .filter((h): h is number => typeof h === 'number' && h > 0)
    .sort((a, b) => a - b);
  if (heights.length === 0) return {};
  const mid = heights.length >> 1;
  const median = heights.length % 2 === 1 ? heights[mid]! : (heights[mid - 1]! + heights[mid]!) / 2;
  return { person_height_px: Math.round(median * 10) / 10 };
}
