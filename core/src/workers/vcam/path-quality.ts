import type { BallPosition } from './ball-positions.ts';
import type { CameraPath } from './camera-path.ts';
import type { PitchRegion } from './pitch-region.ts';

/** How well a camera path follows the play. */
export interface CameraPathQuality {
  /** Frames with a known ball whose centre lies inside the crop, over frames with a known ball; null without ball. */
  ballInCropShare: number | null;
  /** Analysed frames with a ball position (detected, predicted or interpolated). */
  framesWithBall: number;
  /** Mean share of the crop window that lies on the pitch (5×5 samples per window); null without a pitch region. */
  cropOnPitchShare: number | null;
  /** Root-mean-square jerk (third derivative) of the crop centre, source widths per second³. */
  rmsJerk: number;
  /** Largest pan speed, source widths per second. */
  maxPanSpeed: number;
}

/**
 * Measures a camera path: the share of frames with the ball inside the crop,
 * how much of the crop shows the pitch, and its smoothness as the RMS jerk of
 * the centre (finite third differences, `(x[t+2] − 3x[t+1] + 3x[t] − x[t−1])·fps³`),
 * normalised by the source width.
 *
 * @param ball - the ball per analysed frame (ball track, or the tracks' ball).
 */
export function measureCameraPath(
  path: CameraPath,
  ball: readonly (BallPosition | undefined)[],
  pitch?: PitchRegion,
): CameraPathQuality {
  let framesWithBall = 0;
  let inside = 0;
  ball.forEach((b, frame) => {
    const w = path.windows[frame];
    if (!b || !w) return;
    framesWithBall += 1;
    if (Math.abs(b.x - w.cx) <= w.width / 2 && Math.abs(b.y - w.cy) <= w.height / 2) inside += 1;
  });
  let onPitch = 0;
  let samples = 0;
  if (pitch && pitch.source !== 'none') {
    for (const w of path.windows) {
      for (let i = 0; i < 5; i++)
        for (let j = 0; j < 5; j++) {
          samples += 1;
          if (pitch.contains(w.cx + ((i - 2) / 5) * w.width, w.cy + ((j - 2) / 5) * w.height)) onPitch += 1;
        }
    }
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
    cropOnPitchShare: samples > 0 ? onPitch / samples : null,
    rmsJerk: count > 0 ? Math.sqrt(sum / count) : 0,
    maxPanSpeed: maxSpeed,
  };
}
