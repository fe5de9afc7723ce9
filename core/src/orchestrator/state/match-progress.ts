import type { Stage } from '@polyvision/shared';
import type { JobRow, StageRow } from './job-rows.ts';
import type { SegmentRow } from './match-rows.ts';
import { segmentGaps } from './segment-plan.ts';

/** A match job's progress as the jobs API, the CLI and the ops page show it. */
export interface MatchProgress {
  /** True while the end of the match is not known (it is being played / recorded). */
  live: boolean;
  /** Why the match ended: the edge's marker, an operator, or the idle grace; null while live. */
  ended_by: JobRow['ended_by'];
  /** Index of the last segment, once known. */
  final_index: number | null;
  segments_received: number;
  /** Given up when the match closed without them (idle grace). */
  segments_missing: number[];
  segments_cancelled: number[];
  /** A stage failed on them for good; the match went on without them (`ORCHESTRATOR_MATCH_MAX_FAILED_SEGMENTS`). */
  segments_failed: number[];
  /** Indexes not arrived below the highest known one (or the final one): the match waits for them. */
  gaps: number[];
  /** Received segments each stage has completed. */
  processed: Partial<Record<Stage, number>>;
  /**
   * Lag behind live: received segments the job's last stage has not
   * completed yet, and their length in seconds.
   */
  lag_segments: number;
  lag_s: number;
  /** Match-clock seconds received (sum of received segments' durations). */
  received_s: number;
}

/**
 * Progress of a match job from its rows: segments received, processed per
 * stage, gaps, lag behind live (segments received but not through the last stage).
 */
export function matchProgress(job: JobRow, segments: readonly SegmentRow[], rows: readonly StageRow[]): MatchProgress {
  const states = new Map(segments.map((s) => [s.segment_index, s.state]));
  const received = segments.filter((s) => s.state === 'received');
  const processed: Partial<Record<Stage, number>> = {};
  for (const stage of job.stages) {
    processed[stage] = rows.filter(
      (r) => r.stage === stage && r.status === 'completed' && states.get(r.segment_index) === 'received',
    ).length;
  }
  const last = job.stages[job.stages.length - 1];
  const done = new Set(rows.filter((r) => r.stage === last && r.status === 'completed').map((r) => r.segment_index));
  const behind = received.filter((s) => !done.has(s.segment_index));
  return {
    live: job.final_index === null,
    ended_by: job.ended_by,
    final_index: job.final_index,
    segments_received: received.length,
    segments_missing: indexesIn(segments, 'missing'),
    segments_cancelled: indexesIn(segments, 'cancelled'),
    segments_failed: indexesIn(segments, 'failed'),
    gaps: segmentGaps(states, job.final_index),
    processed,
    lag_segments: behind.length,
    lag_s: behind.reduce((t, s) => t + (s.duration_s ?? 0), 0),
    received_s: received.reduce((t, s) => t + (s.duration_s ?? 0), 0),
  };
}

/** The indexes of the segments in `state`, ascending. */
function indexesIn(segments: readonly SegmentRow[], state: SegmentRow['state']): number[] {
  return segments
    .filter((s) => s.state === state)
    .map((s) => s.segment_index)
    .sort((a, b) => a - b);
}
