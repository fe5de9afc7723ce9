/**
 * Constant-velocity Kalman filter of a point in the image (the ball's centre), one axis at a time
 * (x and y are independent under this model): state `[p, v]` in px and px/s, white-noise
 * acceleration process noise (Bar-Shalom, Li & Kirubarajan, "Estimation with Applications to
 * Tracking and Navigation", 2001, §6.3.2: `Q = σa²·[[dt⁴/4, dt³/2], [dt³/2, dt²]]`), position
 * measurements with variance `σm²`.
 */
export interface AxisState {
  p: number;
  v: number;
  /** Covariance `[[pp, pv], [pv, vv]]`. */
  pp: number;
  pv: number;
  vv: number;
}

/** A 2-D constant-velocity state. */
export interface PointState {
  x: AxisState;
  y: AxisState;
}

/** Noise of {@link PointKalman}. */
export interface PointKalmanNoise {
  /** Acceleration noise σa, px/s². */
  accelerationPxPerS2: number;
  /** Measurement noise σm, px. */
  measurementPx: number;
  /** Velocity standard deviation of a new state, px/s. */
  initialSpeedPxPerS: number;
}

/** The constant-velocity point filter (see the module comment). */
export class PointKalman {
  readonly #noise: PointKalmanNoise;

  constructor(noise: PointKalmanNoise) {
    this.#noise = noise;
  }

  /** A state at a first measurement, at rest with a wide velocity uncertainty. */
  initiate(x: number, y: number): PointState {
    const axis = (p: number): AxisState => ({
      p,
      v: 0,
      pp: this.#noise.measurementPx ** 2,
      pv: 0,
      vv: this.#noise.initialSpeedPxPerS ** 2,
    });
    return { x: axis(x), y: axis(y) };
  }

  /** The state `dtS` seconds later. */
  predict(state: PointState, dtS: number): PointState {
    const q = this.#noise.accelerationPxPerS2 ** 2;
    const axis = (a: AxisState): AxisState => ({
      p: a.p + a.v * dtS,
      v: a.v,
      pp: a.pp + 2 * dtS * a.pv + dtS * dtS * a.vv + (q * dtS ** 4) / 4,
      pv: a.pv + dtS * a.vv + (q * dtS ** 3) / 2,
      vv: a.vv + q * dtS * dtS,
    });
    return { x: axis(state.x), y: axis(state.y) };
  }

  /** Squared Mahalanobis distance of a measurement from the state (χ² with 2 degrees of freedom). */
  mahalanobis2(state: PointState, x: number, y: number): number {
    const r = this.#noise.measurementPx ** 2;
    return (x - state.x.p) ** 2 / (state.x.pp + r) + (y - state.y.p) ** 2 / (state.y.pp + r);
  }

  /** Corrects the state with a measured position. */
  update(state: PointState, x: number, y: number): PointState {
    const r = this.#noise.measurementPx ** 2;
    const axis = (a: AxisState, z: number): AxisState => {
      const s = a.pp + r;
      const kp = a.pp / s;
      const kv = a.pv / s;
      const innovation = z - a.p;
      return {
        p: a.p + kp * innovation,
        v: a.v + kv * innovation,
        pp: (1 - kp) * a.pp,
        pv: (1 - kp) * a.pv,
        vv: a.vv - kv * a.pv,
      };
    };
    return { x: axis(state.x, x), y: axis(state.y, y) };
  }
}
