import { type CameraMotion, cameraMotionScale } from '../detect/camera-motion.ts';
import { add, diagonal, identity, invert, type Matrix, multiply, multiplyVector, transpose } from './matrix.ts';

/**
 * Constant-velocity Kalman filter on `(cx, cy, a, h)` — box centre, aspect
 * ratio w/h, height — with velocities, one step per analysed frame.
 * Noise scales with the box height. Source: SORT/DeepSORT's `kalman_filter.py`
 * as used by ByteTrack (Zhang et al., ECCV 2022): weights 1/20 (position) and
 * 1/160 (velocity).
 */
export interface KalmanState {
  /** `[cx, cy, a, h, vcx, vcy, va, vh]`. */
  mean: number[];
  /** 8×8 covariance. */
  covariance: Matrix;
}

const STD_WEIGHT_POSITION = 1 / 20;
const STD_WEIGHT_VELOCITY = 1 / 160;
const F: Matrix = (() => {
  const m = identity(8);
  for (let i = 0; i < 4; i++) m[i]![4 + i] = 1;
  return m;
})();
const FT = transpose(F);
const H: Matrix = identity(8).slice(0, 4);
const HT = transpose(H);

const squares = (values: number[]) => values.map((v) => v * v);

/** A new track's state from its first measurement `(cx, cy, a, h)`. */
export function initiate(measurement: readonly number[]): KalmanState {
  const h = measurement[3]!;
  const wp = STD_WEIGHT_POSITION;
  const wv = STD_WEIGHT_VELOCITY;
  const std = [2 * wp * h, 2 * wp * h, 1e-2, 2 * wp * h, 10 * wv * h, 10 * wv * h, 1e-5, 10 * wv * h];
  return { mean: [...measurement, 0, 0, 0, 0], covariance: diagonal(squares(std)) };
}

/** The state one frame later (prediction step). */
export function predict(state: KalmanState): KalmanState {
  const h = state.mean[3]!;
  const wp = STD_WEIGHT_POSITION;
  const wv = STD_WEIGHT_VELOCITY;
  const q = diagonal(squares([wp * h, wp * h, 1e-2, wp * h, wv * h, wv * h, 1e-5, wv * h]));
  return {
    mean: multiplyVector(F, state.mean),
    covariance: add(multiply(multiply(F, state.covariance), FT), q),
  };
}

/** Corrects the state with a measurement `(cx, cy, a, h)` (update step). */
export function update(state: KalmanState, measurement: readonly number[]): KalmanState {
  const h = state.mean[3]!;
  const wp = STD_WEIGHT_POSITION;
  const r = diagonal(squares([wp * h, wp * h, 1e-1, wp * h]));
  const projectedMean = multiplyVector(H, state.mean);
  const pht = multiply(state.covariance, HT);
  const s = add(multiply(H, pht), r);
  const gain = multiply(pht, invert(s)); // 8×4
  const innovation = measurement.map((m, i) => m - projectedMean[i]!);
  const mean = state.mean.map((v, i) => v + gain[i]!.reduce((sum, k, j) => sum + k * innovation[j]!, 0));
  const covariance = add(state.covariance, multiply(multiply(gain, s), transpose(gain)), -1);
  return { mean, covariance };
}

/**
 * The state moved with the camera (camera-motion compensation, BoT-SORT's GMC: Aharon et al., 2022,
 * applied to this filter's `(cx, cy, a, h)` state): with the motion's linear part R and translation t
 * and s = √|det R|, the centre becomes R·c + t, the centre velocity R·v, the height and its velocity
 * are scaled by s, the aspect ratio is kept; the covariance becomes T·P·Tᵀ with T = diag(R, 1, s, R, 1, s).
 *
 * @param motion - `[a, b, tx, c, d, ty]`, the previous frame's px → this frame's (`camera-motion.ts`).
 */
export function warp(state: KalmanState, motion: CameraMotion): KalmanState {
  const [a, b, tx, c, d, ty] = motion;
  const s = cameraMotionScale(motion);
  const t = identity(8);
  for (const offset of [0, 4]) {
    t[offset]![offset] = a;
    t[offset]![offset + 1] = b;
    t[offset + 1]![offset] = c;
    t[offset + 1]![offset + 1] = d;
    t[offset + 3]![offset + 3] = s;
  }
  const mean = multiplyVector(t, state.mean);
  mean[0]! += tx;
  mean[1]! += ty;
  return { mean, covariance: multiply(multiply(t, state.covariance), transpose(t)) };
}
