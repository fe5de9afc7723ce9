import type { SegmentRef, StageTask } from '@polyvision/shared';

/**
 * Where a segment's frames lie on the match clock. A segment's video starts at its own t = 0;
 * its frame at `tMs` is at match time `start_s + tMs / 1000`. A whole-file job (no `segment`)
 * is its own clock: offset 0, index 0, final.
 */
export interface SegmentClock {
  /** 0-based position of the segment in the match (0 for a whole-file job). */
  index: number;
  /** Start of the segment on the match clock, seconds. */
  startS: number;
  /** Length of the segment, seconds (`Infinity` for a whole-file job: unknown, unbounded). */
  durationS: number;
  /** The match's last segment (true for a whole-file job). */
  final: boolean;
  /** Whether the task is one segment of a match job (false: whole-file job). */
  segmented: boolean;
  /** Match-clock milliseconds of a segment-local time in milliseconds. */
  toMatchMs(localMs: number): number;
  /** Segment-local milliseconds of a match-clock time in milliseconds. */
  toLocalMs(matchMs: number): number;
}

/**
 * The clock of a task's segment (issue #18): match-time offsets of its frames.
 *
 * @param segment - `task.segment` (shared contract `segmentRefSchema`), or undefined for a whole-file job.
 */
export function segmentClock(segment: SegmentRef | undefined): SegmentClock {
  const startMs = (segment?.start_s ?? 0) * 1000;
  return {
    index: segment?.index ?? 0,
    startS: segment?.start_s ?? 0,
    durationS: segment?.duration_s ?? Number.POSITIVE_INFINITY,
    final: segment?.final ?? true,
    segmented: segment !== undefined,
    toMatchMs: (localMs) => Math.round((startMs + localMs) * 1000) / 1000,
    toLocalMs: (matchMs) => Math.round((matchMs - startMs) * 1000) / 1000,
  };
}

/** Shortfall under which a segment counts as filling its slot (a frame or two of container rounding), seconds. */
const FULL_SLOT_TOLERANCE_S = 0.1;

/**
 * Where a segment's video starts on the match clock, seconds. A segment sits at its slot
 * (`start_s`), except the match's first one when its video is shorter than the slot: the edge
 * started recording inside that slot, so the video ends at the slot's end and starts
 * `duration_s − media` into it. (A short last segment is the recording ending inside its slot:
 * it starts at its slot; a match of one segment too.) Without this, a match that starts 2 s into
 * a 4 s slot has its first 2 s placed at 0–2 s and a 2 s hole in the HLS before the next segment.
 *
 * @param segment - `task.segment`, or undefined for a whole-file job (0).
 * @param mediaDurationS - the segment video's own duration, seconds (probe or detections header).
 */
export function segmentStartS(segment: SegmentRef | undefined, mediaDurationS: number): number {
  if (!segment) return 0;
  const shortfall = segment.duration_s - mediaDurationS;
  if (segment.index === 0 && !segment.final && shortfall > FULL_SLOT_TOLERANCE_S) {
    return Math.round((segment.start_s + shortfall) * 1e6) / 1e6;
  }
  return segment.start_s;
}

/** {@link segmentClock} of a task. */
export function taskClock(task: Pick<StageTask, 'segment'>): SegmentClock {
  return segmentClock(task.segment);
}
