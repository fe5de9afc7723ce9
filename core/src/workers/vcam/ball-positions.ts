import { readFile } from 'node:fs/promises';
import { PolyvisionError } from '@polyvision/shared';
import { z } from 'zod';
import type { TracksFile } from '../track/tracks-format.ts';

/** Where the ball is on one analysed frame (panorama pixels), and how that is known. */
export interface BallPosition {
  x: number;
  y: number;
  state: 'detected' | 'predicted' | 'interpolated';
}

/** One entry of `ball-track.json` (written by the track stage): `t` seconds, `x`/`y` panorama pixels. */
const BallTrackEntrySchema = z.object({
  t: z.number().nonnegative(),
  x: z.number().nullable().optional(),
  y: z.number().nullable().optional(),
  state: z.enum(['detected', 'predicted', 'interpolated', 'lost']),
});
const BallTrackFileSchema = z.union([
  z.array(BallTrackEntrySchema),
  z.object({ frames: z.array(BallTrackEntrySchema) }).passthrough(),
]);

/**
 * Reads `ball-track.json` (one entry per analysed frame, `{t, x, y, state}`;
 * either a bare array or `{frames: [...]}`) into one position per analysed
 * frame of `tracks` (nearest entry in time within half a frame; `lost`
 * entries give no position).
 *
 * @throws PolyvisionError `ball_track_invalid` (not retriable) when the file does not parse.
 */
export async function readBallTrack(path: string, tracks: TracksFile): Promise<(BallPosition | undefined)[]> {
  let parsed: z.output<typeof BallTrackFileSchema>;
  try {
    parsed = BallTrackFileSchema.parse(JSON.parse(await readFile(path, 'utf8')));
  } catch (cause) {
    throw new PolyvisionError('ball_track_invalid', `${path}: not a ball track (${(cause as Error).message})`, {
      cause,
    });
  }
  const entries = Array.isArray(parsed) ? parsed : parsed.frames;
  const fps = tracks.detections.analysisFps;
  const out: (BallPosition | undefined)[] = new Array(tracks.frameCount);
  for (const e of entries) {
    if (e.state === 'lost' || e.x == null || e.y == null) continue;
    const frame = Math.round(e.t * fps);
    if (frame < 0 || frame >= tracks.frameCount || Math.abs(e.t * fps - frame) > 0.5) continue;
    out[frame] = { x: e.x, y: e.y, state: e.state };
  }
  return out;
}

/** Ball positions from the `ball` tracks of a tracks file (highest score per frame); interpolated frames count. */
export function ballFromTracks(tracks: TracksFile): (BallPosition | undefined)[] {
  const out: (BallPosition | undefined)[] = new Array(tracks.frameCount);
  const best: number[] = [];
  for (const track of tracks.tracks) {
    if (track.class !== 'ball') continue;
    for (const f of track.frames) {
      if (f.frame >= tracks.frameCount) continue;
      if (out[f.frame] && (best[f.frame] ?? 0) >= f.score) continue;
      best[f.frame] = f.score;
      out[f.frame] = {
        x: (f.box[0] + f.box[2]) / 2,
        y: (f.box[1] + f.box[3]) / 2,
        state: f.interpolated ? 'interpolated' : 'detected',
      };
    }
  }
  return out;
}
