import { carryKind, SEGMENT_SEQUENTIAL_STAGES, type Stage } from '@polyvision/shared';
import { dependenciesOf } from '../contracts/stages.ts';
import type { StageStatus } from './job-rows.ts';

/**
 * A segment's state in `job_segments`: `received` (its panorama arrived), `missing` (given up at the
 * idle grace), `cancelled` (by range), `failed` (a stage failed on it for good; the match goes on).
 */
export type SegmentState = 'received' | 'missing' | 'cancelled' | 'failed';

/** What the plan needs of a stage row. */
export interface PlanRow {
  stage: Stage;
  segment_index: number;
  status: StageStatus;
}

/** A match job as the plan sees it. */
export interface PlanInput {
  /** The job's stages, in pipeline order. */
  stages: readonly Stage[];
  /** Known segments by index (absent: not arrived yet). */
  segments: ReadonlyMap<number, SegmentState>;
  rows: readonly PlanRow[];
  /** Index of the last segment, or null while the match goes on. */
  finalIndex: number | null;
  /**
   * Most tasks of one fan-out stage (`stitch`, `detect`) of this match dispatched or running at
   * once, lowest segments first; absent or null: no limit (every received segment at once).
   */
  fanOutInFlight?: number | null;
}

/** One stage task the orchestrator may dispatch now. */
export interface PlannedTask {
  stage: Stage;
  index: number;
  /** The segment is the match's last (the end is known). */
  final: boolean;
  /** The segment whose `<stage>-carry` output this task reads (sequential stages), or null. */
  carryFrom: number | null;
}

const SEQUENTIAL = new Set<Stage>(SEGMENT_SEQUENTIAL_STAGES);

/**
 * Stages that write a per-match result that must know whether the segment
 * is the last (analyze's final report, encode's EVENT → VOD playlist). Their
 * task for segment k runs as soon as its inputs are there, as final when the
 * end of the match is already known; when the end becomes known after the last
 * segment's run went out as not final, that run is done again as final
 * (`MatchStateMachine` `#finalAgain`: the playlist gets its `#EXT-X-ENDLIST`,
 * the analytics their final summary). Until 2026-11-28 the task waited for a
 * later segment or the end instead: a whole segment of live lag on every
 * segment, to save one re-run at the end of a match.
 */
export const FINAL_AWARE_STAGES: ReadonlySet<Stage> = new Set<Stage>(['analyze', 'encode']);

/** Whether `stage` runs over the segments in order, carrying state (track, vcam, analyze, encode). */
export function isSequential(stage: Stage): boolean {
  return SEQUENTIAL.has(stage);
}

/**
 * The received segment before `index` a sequential stage continues from:
 * the nearest lower index that was received, skipping missing, cancelled and
 * failed ones. `undefined` when an index below is still unknown (a gap that may yet
 * arrive: the stage waits), `null` when there is none (the stage starts fresh).
 */
export function previousReceived(
  segments: ReadonlyMap<number, SegmentState>,
  index: number,
): number | null | undefined {
  for (let k = index - 1; k >= 0; k--) {
    const state = segments.get(k);
    if (state === undefined) return undefined;
    if (state === 'received') return k;
  }
  return null;
}

/**
 * Which pending stage rows of a match job can be dispatched now:
 * - a per-segment stage (`stitch`, `detect`) of any received segment once
 *   its dependencies on that segment are completed (segments fan out);
 * - a sequential stage for segment k once its dependencies on k are
 *   completed and its own run on the previous received segment is
 *   completed (every index below k must be known: a gap holds it back);
 * - analyze/encode ({@link FINAL_AWARE_STAGES}) like any sequential stage,
 *   `final` on the match's last segment once the end is known;
 * - with `fanOutInFlight`, a fan-out stage only while fewer than that many of
 *   its tasks are dispatched or running, the lowest segments first. Without
 *   it, a backlog of detect tasks spread over the task partitions is taken in
 *   no particular order, and the sequential chain (track → … → encode), which
 *   needs every earlier segment's detect, waits for the slowest of them: a
 *   1-minute edge match on 2 loaded workers ran detect 1 after detect 2–7 and
 *   10, and the EVENT playlist stood still until the backlog was gone
 *   (bench/segments/edge-match.ts).
 * Rows of segments that are not `received` are never dispatched.
 */
export function dispatchableTasks(input: PlanInput): PlannedTask[] {
  const status = new Map<string, StageStatus>();
  for (const row of input.rows) status.set(`${row.stage}:${row.segment_index}`, row.status);
  const ready = (row: PlanRow): boolean =>
    row.status === 'pending' &&
    input.segments.get(row.segment_index) === 'received' &&
    dependenciesOf(row.stage, input.stages).every((dep) => status.get(`${dep}:${row.segment_index}`) === 'completed');
  const fanOutAllowed = fanOutWindow(input, ready);
  const last = lastSegmentInMatch(input.segments, input.finalIndex);
  const out: PlannedTask[] = [];
  for (const row of input.rows) {
    if (!ready(row)) continue;
    const k = row.segment_index;
    if (!isSequential(row.stage) && fanOutAllowed && !fanOutAllowed.has(`${row.stage}:${k}`)) continue;
    let carryFrom: number | null = null;
    if (isSequential(row.stage)) {
      const previous = previousReceived(input.segments, k);
      if (previous === undefined) continue;
      if (previous !== null && status.get(`${row.stage}:${previous}`) !== 'completed') continue;
      carryFrom = previous;
    }
    out.push({ stage: row.stage, index: k, final: last === k, carryFrom });
  }
  return out;
}

/**
 * The fan-out rows (`stage:index`) that fit in the `fanOutInFlight` window: per
 * stage, the lowest ready segments, as many as the window has room for beside
 * the ones dispatched or running. Null without a window.
 */
function fanOutWindow(input: PlanInput, ready: (row: PlanRow) => boolean): Set<string> | null {
  const limit = input.fanOutInFlight;
  if (limit == null) return null;
  const allowed = new Set<string>();
  const byStage = new Map<Stage, { inFlight: number; ready: number[] }>();
  for (const row of input.rows) {
    if (isSequential(row.stage)) continue;
    const entry = byStage.get(row.stage) ?? { inFlight: 0, ready: [] };
    byStage.set(row.stage, entry);
    if (row.status === 'dispatched' || row.status === 'running') entry.inFlight++;
    else if (ready(row)) entry.ready.push(row.segment_index);
  }
  for (const [stage, { inFlight, ready: indexes }] of byStage) {
    const room = Math.max(0, limit - inFlight);
    for (const k of indexes.sort((a, b) => a - b).slice(0, room)) allowed.add(`${stage}:${k}`);
  }
  return allowed;
}

/**
 * The match's last segment still in it, once that is settled: the end is known and every index
 * after the highest received one, up to the final index, is known and left out (missing,
 * cancelled, failed). Its analyze/encode run as `final` (VOD playlist, final analytics). Null
 * while the end is unknown, a later index may still arrive, or no segment is received.
 */
export function lastSegmentInMatch(
  segments: ReadonlyMap<number, SegmentState>,
  finalIndex: number | null,
): number | null {
  if (finalIndex === null) return null;
  for (let k = finalIndex; k >= 0; k--) {
    const state = segments.get(k);
    if (state === undefined) return null;
    if (state === 'received') return k;
  }
  return null;
}

/** Indexes below the highest known one (or the final index) that have not arrived: gaps, ascending. */
export function segmentGaps(segments: ReadonlyMap<number, SegmentState>, finalIndex: number | null): number[] {
  const top = finalIndex ?? Math.max(-1, ...segments.keys());
  const gaps: number[] = [];
  for (let k = 0; k <= top; k++) if (!segments.has(k)) gaps.push(k);
  return gaps;
}

/**
 * Whether the match job is done: the end is known, every index up to the
 * final one is known (received, missing, cancelled or failed), and every stage row
 * of every received segment is completed.
 */
export function matchComplete(input: PlanInput): boolean {
  if (input.finalIndex === null) return false;
  if (segmentGaps(input.segments, input.finalIndex).length > 0) return false;
  return input.rows.every((row) => input.segments.get(row.segment_index) !== 'received' || row.status === 'completed');
}

/** The artifact kind a sequential stage's task reads from its previous segment's run. */
export { carryKind };
