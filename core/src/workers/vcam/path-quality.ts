import type { TracksFile } from '../track/tracks-format.ts';
import type { CameraPath } from './camera-path.ts';

/** How well a camera path follows the play. */
export interface CameraPathQuality {
  /** Frames where a ball track exists and its centre lies inside the crop, over frames with a ball track; null without ball. */
  ballInCropShare: number | null;
  framesWithBall: number;
  /** Root-mean-square jerk (third derivative) of the crop centre, source widths per second³. */
  rmsJerk: number;
  /** Largest pan speed, source widths per second. */
  maxPanSpeed: number;
}

/**
 * Measures a camera path: the share of frames with the ball inside the crop,
 * and its smoothness as the RMS jerk of the centre (finite third differences,
 * `(x[t+2] − 3x[t+1] + 3x[t] − x[t−1])·fps³`), normalised by the source width.
 */
export function measureCameraPath(path: CameraPath, tracks: TracksFile): CameraPathQuality {
  let framesWithBall = 0;
  let inside = 0;
  const best = new Map<number, { x: number; y: number; score: number }>();
  for (const t of tracks.tracks) {
    if (t.class !== 'ball') continue;
    for (const f of t.frames) {
      const cur = best.get(f.frame);
      if (!cur || cur.score < f.score) {
        best.set(f.frame, { x: (f.box[0] + f.box[2]) / 2, y: (f.box[1] + f.box[3]) / 2, score: f.score });
      }
    }
  }
  for (const [frame, b] of best) {
    const w = path.windows[frame];
    if (!w) continue;
    framesWithBall += 1;
    if (Math.abs(b.x - w.cx) <= w.width / 2 && Math.abs(b.y - w.cy) <= w.height / 2) inside += 1;
  }
  const W = path.sourceWidth;
  const fps = path.fps;
  let sum = 0;
  let count = 0;
  let maxSpeed = 0;
  const ws = path.windows;
  for (let t = 1; t + 2 < ws.length; t++) {
    const jx = ws[t + 2]!.cx - 3 * ws[t + 1]!.cx + 3 * ws[t]!.cx - ws[t - 1]!.cx;
    const jy = ws[t + 2]!.cy - 3 * ws[t + 1]!.cy + 3 * ws[t]!.cy - ws[t - 1]!.cy;
    sum += ((jx * jx + jy * jy) * fps ** 6) / (W * W);
    count += 1;
  }
  for (let t = 1; t < ws.length; t++) {
    const v = Math.hypot(ws[t]!.cx - ws[t - 1]!.cx, ws[t]!.cy - ws[t - 1]!.cy) * fps;
    maxSpeed = Math.max(maxSpeed, v / W);
  }
  return {
    ballInCropShare: framesWithBall > 0 ? inside / framesWithBall : null,
    framesWithBall,
    rmsJerk: count > 0 ? Math.sqrt(sum / count) : 0,
    maxPanSpeed: maxSpeed,
  };
}
