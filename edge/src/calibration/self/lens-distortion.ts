/**
 * Radial lens distortion of a camera, two forms:
 * - the one-parameter **division model** (Fitzgibbon, "Simultaneous linear
 *   estimation of multiple view geometry and lens distortion", CVPR 2001):
 *   `p_u = c + (p_d − c) / (1 + λ·r_d²)`, r in pixels / `normPx`. It undistorts in
 *   closed form and stays monotonic for the strong barrel of wide stadium
 *   lenses, so the estimation searches over λ;
 * - **Brown–Conrady** (OpenCV order `k1 k2 p1 p2 k3`), the form `venue.json`
 *   stores: undistorted normalised `x` → distorted `x·(1 + k1 r² + k2 r⁴ + k3 r⁶)`
 *   (tangential terms 0 here). The stitcher needs exactly this forward direction
 *   (panorama → undistorted → distorted source pixel), in closed form.
 * `brownFromDivision` converts by least squares over the radii the image uses.
 */
import { Matrix, solve } from 'ml-matrix';

/** Brown–Conrady coefficients (OpenCV order) with the pinhole they are relative to, pixels. */
export interface BrownDistortion {
  k1: number;
  k2: number;
  p1: number;
  p2: number;
  k3: number;
}

/** Pinhole intrinsics, pixels. */
export interface PinholeIntrinsics {
  fx: number;
  fy: number;
  cx: number;
  cy: number;
}

/** A division-model lens: centre `(cx, cy)` px, radii normalised by `normPx`. */
export interface DivisionLens {
  lambda: number;
  cx: number;
  cy: number;
  normPx: number;
}

/** Undistorts a pixel with the division model; NaN where the model folds (1 + λr² ≤ 0). */
export function undistortDivision(lens: DivisionLens, u: number, v: number): [number, number] {
  const x = (u - lens.cx) / lens.normPx;
  const y = (v - lens.cy) / lens.normPx;
  const d = 1 + lens.lambda * (x * x + y * y);
  if (!(d > 0.05)) return [Number.NaN, Number.NaN];
  return [lens.cx + (lens.normPx * x) / d, lens.cy + (lens.normPx * y) / d];
}

/**
 * Distorts an undistorted pixel with the division model (its closed-form
 * inverse: `r_d = (1 − √(1 − 4λ·r_u²)) / (2λ·r_u)`); NaN where no recorded
 * pixel maps there (beyond the model's fold).
 */
export function distortDivision(lens: DivisionLens, u: number, v: number): [number, number] {
  const x = (u - lens.cx) / lens.normPx;
  const y = (v - lens.cy) / lens.normPx;
  const ru = Math.hypot(x, y);
  if (ru === 0 || lens.lambda === 0) return [u, v];
  const disc = 1 - 4 * lens.lambda * ru * ru;
  if (!(disc >= 0)) return [Number.NaN, Number.NaN];
  const rd = (1 - Math.sqrt(disc)) / (2 * lens.lambda * ru);
  if (!(rd > 0) || !(1 + lens.lambda * rd * rd > 0.05)) return [Number.NaN, Number.NaN];
  const f = rd / ru;
  return [lens.cx + lens.normPx * x * f, lens.cy + lens.normPx * y * f];
}

/**
 * Applies Brown–Conrady distortion to an undistorted pixel (OpenCV's
 * `projectPoints` model), giving the pixel the camera records.
 */
export function distortBrown(k: PinholeIntrinsics, d: BrownDistortion, u: number, v: number): [number, number] {
  const x = (u - k.cx) / k.fx;
  const y = (v - k.cy) / k.fy;
  const r2 = x * x + y * y;
  const radial = 1 + r2 * (d.k1 + r2 * (d.k2 + r2 * d.k3));
  const xd = x * radial + 2 * d.p1 * x * y + d.p2 * (r2 + 2 * x * x);
  const yd = y * radial + d.p1 * (r2 + 2 * y * y) + 2 * d.p2 * x * y;
  return [k.fx * xd + k.cx, k.fy * yd + k.cy];
}

/**
 * Undistorts a recorded pixel with Brown–Conrady: the inverse of {@link distortBrown} by fixed-point
 * iteration on the normalised coordinates (as OpenCV's `undistortPoints`, 20 iterations); NaN when
 * it does not converge to within 1e-3 px (beyond the model's fold).
 */
export function undistortBrown(k: PinholeIntrinsics, d: BrownDistortion, u: number, v: number): [number, number] {
  let [x, y] = [u, v];
  for (let i = 0; i < 20; i++) {
    const [du, dv] = distortBrown(k, d, x, y);
    x += u - du;
    y += v - dv;
  }
  const [du, dv] = distortBrown(k, d, x, y);
  return Math.hypot(du - u, dv - v) < 1e-3 ? [x, y] : [Number.NaN, Number.NaN];
}

/** True when every coefficient is 0 (a pinhole camera: no distortion to apply). */
export function isPinhole(d: BrownDistortion): boolean {
  return d.k1 === 0 && d.k2 === 0 && d.p1 === 0 && d.p2 === 0 && d.k3 === 0;
}

/**
 * Brown–Conrady `k1 k2 k3` (p1 = p2 = 0) equivalent to a division-model lens,
 * with intrinsics `fx = fy = normPx` at the lens centre: the inverse of the
 * division model, `r_d(r_u)`, sampled over the undistorted radii up to the one
 * of the distorted radius `maxRadiusPx`, fitted by linear least squares on
 * `r_d/r_u − 1 = k1 r_u² + k2 r_u⁴ + k3 r_u⁶`.
 *
 * @returns the coefficients, the intrinsics and the worst radial misfit in pixels.
 */
export function brownFromDivision(
  lens: DivisionLens,
  maxRadiusPx: number,
): { intrinsics: PinholeIntrinsics; distortion: BrownDistortion; maxFitErrorPx: number } {
  const rows: number[][] = [];
  const rhs: number[] = [];
  const samples: Array<[number, number]> = [];
  const maxRd = maxRadiusPx / lens.normPx;
  for (let i = 1; i <= 200; i++) {
    const rd = (maxRd * i) / 200;
    const den = 1 + lens.lambda * rd * rd;
    if (!(den > 0.05)) break;
    const ru = rd / den;
    samples.push([ru, rd]);
    const r2 = ru * ru;
    rows.push([r2, r2 * r2, r2 * r2 * r2]);
    rhs.push(rd / ru - 1);
  }
  const a = new Matrix(rows);
  const coef = solve(a, Matrix.columnVector(rhs), true).to1DArray();
  const [k1, k2, k3] = coef as [number, number, number];
  let worst = 0;
  for (const [ru, rd] of samples) {
    const r2 = ru * ru;
    const fit = ru * (1 + r2 * (k1 + r2 * (k2 + r2 * k3)));
    worst = Math.max(worst, Math.abs(fit - rd) * lens.normPx);
  }
  return {
    intrinsics: { fx: lens.normPx, fy: lens.normPx, cx: lens.cx, cy: lens.cy },
    distortion: { k1, k2, p1: 0, p2: 0, k3 },
    maxFitErrorPx: worst,
  };
}
