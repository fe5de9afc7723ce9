import type { ArtifactRef } from '@polyvision/shared';
import type { Queryable } from '../../db/database.ts';
import type { JobRow, StageRow } from './job-rows.ts';
import type { SegmentState } from './segment-plan.ts';

/** A row of `job_segments`. */
export interface SegmentRow {
  job_id: string;
  segment_index: number;
  state: SegmentState;
  slot: string | number | null;
  start_s: number | null;
  duration_s: number | null;
  input: ArtifactRef | null;
  received_at: Date | null;
}

/** A match job loaded for a transition: the job (locked), its stage rows and segments. */
export interface MatchState {
  job: JobRow;
  rows: StageRow[];
  segments: Map<number, SegmentRow>;
}

/** The stage rows (ordered by segment, then the job's stage order) and segments of a match job. */
export async function loadMatch(tx: Queryable, job: JobRow): Promise<MatchState> {
  const rows = await tx.query<StageRow>(`SELECT * FROM job_stages WHERE job_id = $1`, [job.job_id]);
  const order = new Map(job.stages.map((s, i) => [s, i]));
  rows.rows.sort((a, b) => a.segment_index - b.segment_index || order.get(a.stage)! - order.get(b.stage)!);
  const segments = await tx.query<SegmentRow>(`SELECT * FROM job_segments WHERE job_id = $1`, [job.job_id]);
  return { job, rows: rows.rows, segments: new Map(segments.rows.map((s) => [s.segment_index, s])) };
}

/** The segments' states by index (for the plan). */
export function segmentStates(state: MatchState): Map<number, SegmentState> {
  return new Map([...state.segments].map(([k, s]) => [k, s.state]));
}

/** Match progress 0..1: completed stage rows of received segments over all of them. */
export function matchProgressFraction(state: MatchState): number {
  const live = state.rows.filter((r) => state.segments.get(r.segment_index)?.state === 'received');
  if (live.length === 0) return 0;
  const sum = live.reduce((t, r) => t + (r.status === 'completed' ? 1 : Math.min(1, Math.max(0, r.progress))), 0);
  return Math.round((sum / live.length) * 10_000) / 10_000;
}
