import { z } from 'zod';
import { ballCarrySchema } from './ball/ball-carry.ts';

const finite = z.number().finite();

/** Validates a `ByteTrackerSnapshot` read back from a carry artifact. */
export const byteTrackerSnapshotSchema = z.object({
  frame: z.number().int().nonnegative(),
  nextId: z.number().int().positive(),
  tracks: z.array(
    z.object({
      id: z.number().int().nonnegative(),
      mean: z.array(finite).length(8),
      covariance: z.array(z.array(finite).length(8)).length(8),
      state: z.enum(['tracked', 'lost']),
      confirmed: z.boolean(),
      score: finite,
      lastFrame: z.number().int().nonnegative(),
      detectionBox: z.tuple([finite, finite, finite, finite]),
      feature: z.array(finite).nullable(),
    }),
  ),
});

/**
 * What the track stage carries from segment k to k+1 of a match (kind `track-carry`):
 * the people tracker's state (ids, lost tracks, Kalman state), the ball tracker's context (the
 * segment's last frames and their candidates; absent in carries written before it existed: the next
 * segment's ball track then starts fresh), the score thresholds chosen on the first segment (so every
 * segment tracks with the same ones), and the ids seen so far.
 */
export const trackCarrySchema = z.object({
  tracker: byteTrackerSnapshotSchema,
  ball: ballCarrySchema.optional(),
  thresholds: z.object({
    high: finite,
    low: finite,
    source: z.enum(['options', 'model-card', 'calibration', 'default']),
    samples: z.number().int().nonnegative(),
  }),
  /** Analysed frames of the match so far (the next segment's first frame is this match frame). */
  matchFrames: z.number().int().nonnegative(),
  /** The rate the segment was analysed at (absent in carries written before 2026-11-29). */
  analysisFps: z.number().positive().optional(),
  /**
   * The camera's motion into the segment's last analysed frame (`CameraMotion`), when it moved: the
   * next segment's first frame has none measured (its previous frame is in this segment's file), so
   * the tracker takes the camera to go on moving so. Absent: still, or not measured.
   */
  cameraMotion: z.tuple([finite, finite, finite, finite, finite, finite]).optional(),
});
export type TrackCarry = z.output<typeof trackCarrySchema>;

/**
 * The carry for a segment that follows `gapS` seconds of the match left out (segments missing,
 * cancelled or failed; `task.segment.gap_s`): every track has ended — the gap is far beyond any lost
 * buffer, and a player's box from before it says nothing of where he is now; so has the ball's (no
 * context) — while ids go on (none is reused) with the same thresholds, and the match's frame count
 * runs on over the gap.
 *
 * @param fps - analysed frames per second of the segment.
 * @returns `carry` itself when there is no gap.
 */
export function trackCarryAcrossGap(carry: TrackCarry, gapS: number, fps: number): TrackCarry {
  if (!(gapS > 0)) return carry;
  const skipped = Math.round(gapS * fps);
  return {
    ...carry,
    tracker: { ...carry.tracker, frame: carry.tracker.frame + skipped, tracks: [] },
    ball: undefined,
    cameraMotion: undefined,
    matchFrames: carry.matchFrames + skipped,
  };
}

/**
 * The carry for a segment analysed at `fps` when the previous one was analysed at another rate (two
 * workers configured differently, a setting changed during the match): the Kalman states' velocities
 * are per analysed frame and the lost buffers count frames, so the tracks end there — ids go on (none
 * is reused), the thresholds stay, and the ball starts fresh (`BallCarry.analysisFps` says so too).
 *
 * @returns `carry` itself when the rates agree or the carry does not say its rate.
 */
export function trackCarryAtRate(carry: TrackCarry, fps: number): TrackCarry {
  if (!analysedAtOtherRate(carry, fps)) return carry;
  return { ...carry, tracker: { ...carry.tracker, tracks: [] }, ball: undefined, cameraMotion: undefined };
}

/** Whether the carry says its segment was analysed at a rate other than `fps` (older carries do not say). */
export function analysedAtOtherRate(carry: TrackCarry, fps: number): boolean {
  return carry.analysisFps !== undefined && carry.analysisFps !== fps;
}
