import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { PolyvisionError } from '@polyvision/shared';
import { z } from 'zod';
import { MatchSegmentSchema } from '../tracks-format.ts';

/**
 * `ball-track.json`, written by the track stage (kind `ball-track`): the ball's path, one entry per
 * analysed frame, at most one ball.
 * ```json
 * {"format":"polyvision.ball-track","version":1,
 *  "source":{"width":2880,"height":392},"analysisFps":10,
 *  "frames":[{"frame":0,"t":0,"x":1412.5,"y":201,"state":"detected","score":0.41},
 *            {"frame":1,"t":0.1,"x":1420.1,"y":203.2,"state":"interpolated","score":0},
 *            {"frame":2,"t":0.2,"x":null,"y":null,"state":"lost","score":0}],
 *  "summary":{"frames":…,"detected":…,"interpolated":…,"predicted":…,"lost":…,"coverage":0.93,
 *             "candidates":…,"keptCandidatesPerFrame":…,"rejected":{"lowScore":…,"offPitch":…,"static":…,"beyondTopK":…},"tracklets":…,"followingPlayer":…,"stillTracklets":…,"chosenTracklets":…},
 *  "options":{…}}
 * ```
 * `t`: presentation time of the analysed frame, seconds from the clip start (the detections'
 * `tMs` / 1000). `x`, `y`: ball centre in source (panorama) pixels, null when `lost`. `state`:
 * `detected` (a detector box, kept by the ball tracker), `interpolated` (between two detections,
 * linear), `predicted` (constant-velocity extrapolation after the last detection), `lost` (no
 * position). `score`: the detection's score, 0 unless `detected`.
 */
export const BALL_TRACK_FORMAT = 'polyvision.ball-track';

export const BallFrameSchema = z.object({
  frame: z.number().int().nonnegative(),
  t: z.number().nonnegative(),
  x: z.number().nullable(),
  y: z.number().nullable(),
  state: z.enum(['detected', 'predicted', 'interpolated', 'lost']),
  score: z.number().min(0).max(1),
});

export const BallTrackFileSchema = z.object({
  format: z.literal(BALL_TRACK_FORMAT),
  version: z.literal(1),
  source: z.object({ width: z.number().int().positive(), height: z.number().int().positive() }),
  analysisFps: z.number().positive(),
  frames: z.array(BallFrameSchema),
  summary: z.object({
    frames: z.number().int(),
    detected: z.number().int(),
    interpolated: z.number().int(),
    predicted: z.number().int(),
    lost: z.number().int(),
    coverage: z.number(),
    candidates: z.number().int(),
    keptCandidatesPerFrame: z.number(),
    rejected: z.object({
      lowScore: z.number().int(),
      offPitch: z.number().int(),
      static: z.number().int(),
      beyondTopK: z.number().int().optional(),
    }),
    tracklets: z.number().int(),
    followingPlayer: z.number().int(),
    // Absent in files before 2026-11-29 (the still-tracklet test).
    stillTracklets: z.number().int().optional(),
    chosenTracklets: z.number().int(),
  }),
  options: z.record(z.string(), z.unknown()),
  /**
   * Present when the file is one segment of a match (issue #18), as in tracks.json: `frame`/`t` are
   * the segment's own; its frame 0 is match frame `firstMatchFrame`, at match time `startS` seconds.
   * Absent in files before 2026-11-29 (session 16).
   */
  segment: MatchSegmentSchema.optional(),
});
export type BallTrackFile = z.output<typeof BallTrackFileSchema>;

/** Writes `ball-track.json` atomically (temporary name, then rename). */
export async function writeBallTrackFile(path: string, file: BallTrackFile): Promise<void> {
  const temporary = `${path}.${process.pid}.${Date.now()}.part`;
  try {
    await writeFile(temporary, JSON.stringify(file));
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

/**
 * Reads and validates `ball-track.json`.
 *
 * @throws PolyvisionError `ball_track_invalid` (not retriable).
 */
export async function readBallTrackFile(path: string): Promise<BallTrackFile> {
  let value: unknown;
  try {
    value = JSON.parse(await readFile(path, 'utf8'));
  } catch (cause) {
    throw new PolyvisionError('ball_track_invalid', `${path}: not a JSON ball track`, { cause });
  }
  const parsed = BallTrackFileSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new PolyvisionError('ball_track_invalid', `${path}: ${issue?.path.join('.')} ${issue?.message}`);
  }
  return parsed.data;
}
