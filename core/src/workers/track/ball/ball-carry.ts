import { z } from 'zod';
import type { BallCandidate } from './ball-candidates.ts';

const finite = z.number().finite();

/**
 * What the ball tracker carries from segment k to k+1 of a match (part of `track-carry`): the
 * last analysed frames of the segment (`BALL_CARRY_S` of them) with their ball candidates. The ball
 * tracker is offline — it chooses the ball's path from tracklets over a whole clip — so the next
 * segment runs it over these frames and its own, and writes only its own: a tracklet that crosses the
 * boundary stays one tracklet (its detections count together; a gap across the boundary is
 * interpolated), and the static-mark filter sees a full window at the segment's start.
 *
 * `analysisFps`: the rate of the carried frames (a segment analysed at another rate starts fresh: the
 * motion model's step would be wrong). `frameTimesS`: the carried frames' times in seconds relative
 * to the next segment's start (negative, ascending, one analysed-frame step apart).
 * `candidates[].frame`: index into `frameTimesS`.
 */
export const ballCarrySchema = z.object({
  analysisFps: z.number().positive(),
  frameTimesS: z.array(finite),
  candidates: z.array(
    z.object({
      frame: z.number().int().nonnegative(),
      x: finite,
      y: finite,
      sizePx: finite,
      score: finite,
    }),
  ),
});
export type BallCarry = z.output<typeof ballCarrySchema>;

/**
 * Seconds of a segment's end carried to the next one: the ball tracker's longest look across a
 * boundary — the static-mark window (±1 s), the interpolated gap (1 s) and the coasting of a tracklet
 * (0.5 s) — rounded up.
 */
export const BALL_CARRY_S = 2;

/**
 * The ball carry a segment leaves: of the frames the tracker saw (the carried context first, then the
 * segment's own), the last `BALL_CARRY_S` seconds' worth and their candidates at or above
 * `minScore` (the rest are filtered out anyway).
 *
 * @param frameTimesS - every frame the tracker saw, seconds on the segment's clock (context negative).
 * @param candidates - their candidates, `frame` indexing `frameTimesS`.
 * @param segmentDurationS - the segment's length: the next segment starts there.
 */
export function ballCarryOf(
  frameTimesS: readonly number[],
  candidates: readonly BallCandidate[],
  fps: number,
  segmentDurationS: number,
  minScore = 0,
): BallCarry {
  const first = Math.max(0, frameTimesS.length - Math.round(BALL_CARRY_S * fps));
  return {
    analysisFps: fps,
    frameTimesS: frameTimesS.slice(first).map((t) => Math.round((t - segmentDurationS) * 1e6) / 1e6),
    candidates: candidates
      .filter((c) => c.frame >= first && c.score >= minScore)
      .map((c) => ({ ...c, frame: c.frame - first })),
  };
}
