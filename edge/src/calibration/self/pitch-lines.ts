/**
 * Pitch-line pixels and the plumb-line lens estimate (Brown, "Close-range
 * camera calibration", 1971: lines straight in the world must be straight in
 * the undistorted image).
 *
 * Line pixels: the painted lines are bright, unsaturated and flanked on both
 * sides by turf (green); clouds and white shirts are not flanked by turf at
 * the flank distance, and the background frame has no players anyway. Each
 * horizontal and vertical run of such pixels contributes its centre, so a
 * line counts once per row or column whatever its painted width.
 *
 * Straightness score of a lens candidate: the pixels are undistorted and
 * voted into a Hough accumulator (ρ, θ) (Duda & Hart, CACM 1972); the score is
 * the share of votes in the fullest cells, largest when the long lines are straight.
 */
import { type DivisionLens, undistortDivision } from './lens-distortion.ts';

/** Pixel positions (distorted image), interleaved x, y. */
export type PointList = Float64Array;

function isTurf(rgb: Uint8Array, i: number): boolean {
  const r = rgb[i] as number;
  const g = rgb[i + 1] as number;
  const b = rgb[i + 2] as number;
  return g > r + 6 && g > b + 2 && g > 40;
}

function isPaint(rgb: Uint8Array, i: number): boolean {
  const r = rgb[i] as number;
  const g = rgb[i + 1] as number;
  const b = rgb[i + 2] as number;
  const lo = Math.min(r, g, b);
  const hi = Math.max(r, g, b);
  return lo > 140 && hi - lo < 70;
}

/**
 * Centres of the runs of line paint in an RGB24 background frame.
 * @param flankPx - how far either side of a run turf must be. @defaultValue width/400, at least 3
 */
export function linePixels(rgb: Uint8Array, widthPx: number, heightPx: number, flankPx?: number): PointList {
  const flank = flankPx ?? Math.max(3, Math.round(widthPx / 400));
  const maxRun = flank * 3;
  const out: number[] = [];
  // Vertical runs (near-horizontal lines), column by column.
  for (let x = 0; x < widthPx; x += 1) {
    let start = -1;
    for (let y = 0; y <= heightPx; y++) {
      const paint = y < heightPx && isPaint(rgb, (y * widthPx + x) * 3);
      if (paint && start < 0) start = y;
      if (!paint && start >= 0) {
        const len = y - start;
        const above = start - flank;
        const below = y - 1 + flank;
        if (len <= maxRun && above >= 0 && below < heightPx) {
          if (isTurf(rgb, (above * widthPx + x) * 3) && isTurf(rgb, (below * widthPx + x) * 3)) {
            out.push(x, (start + y - 1) / 2);
          }
        }
        start = -1;
      }
    }
  }
  // Horizontal runs (near-vertical lines), row by row.
  for (let y = 0; y < heightPx; y += 1) {
    let start = -1;
    for (let x = 0; x <= widthPx; x++) {
      const paint = x < widthPx && isPaint(rgb, (y * widthPx + x) * 3);
      if (paint && start < 0) start = x;
      if (!paint && start >= 0) {
        const len = x - start;
        const left = start - flank;
        const right = x - 1 + flank;
        if (len <= maxRun && left >= 0 && right < widthPx) {
          if (isTurf(rgb, (y * widthPx + left) * 3) && isTurf(rgb, (y * widthPx + right) * 3)) {
            out.push((start + x - 1) / 2, y);
          }
        }
        start = -1;
      }
    }
  }
  return Float64Array.from(out);
}

/** Hough accumulator geometry: ρ bins of 2 px; θ bins of 0.25° (measurement) or 0.5° (search). */
const RHO_BIN_PX = 2;
const trig = (bins: number) => ({
  cos: Float64Array.from({ length: bins }, (_, i) => Math.cos((Math.PI * i) / bins)),
  sin: Float64Array.from({ length: bins }, (_, i) => Math.sin((Math.PI * i) / bins)),
});
const TRIG = new Map([720, 360].map((b) => [b, trig(b)]));

/** A Hough accumulator over undistorted points, and its `(ρ, θ)` decoding. */
export interface HoughVotes {
  votes: Uint32Array;
  rhoBins: number;
  rhoOffsetPx: number;
  /** Undistorted points relative to the lens centre, times `zoom`, interleaved; NaN where the lens folds. */
  points: Float64Array;
  /** The rescaling applied to the undistorted points. */
  zoom: number;
}

/**
 * Undistorts `points` with `lens` and votes them into a Hough accumulator.
 * The undistorted points are rescaled about the centre to the distorted
 * points' RMS radius: undistortion also zooms, and a zoomed-out set would
 * crowd into fewer ρ bins and look "straighter" for that alone.
 */
export function houghVotes(points: PointList, lens: DivisionLens, thetaBins: 720 | 360 = 720): HoughVotes {
  const n = points.length / 2;
  const undistorted = new Float64Array(points.length);
  let sumD = 0;
  let sumU = 0;
  for (let i = 0; i < n; i++) {
    const px = points[2 * i] as number;
    const py = points[2 * i + 1] as number;
    const [x, y] = undistortDivision(lens, px, py);
    undistorted[2 * i] = x - lens.cx;
    undistorted[2 * i + 1] = y - lens.cy;
    if (!Number.isFinite(x)) continue;
    sumD += (px - lens.cx) ** 2 + (py - lens.cy) ** 2;
    sumU += (x - lens.cx) ** 2 + (y - lens.cy) ** 2;
  }
  const zoom = sumU > 0 ? Math.sqrt(sumD / sumU) : 1;
  let maxR = 0;
  for (let i = 0; i < points.length; i++) undistorted[i] = (undistorted[i] as number) * zoom;
  for (let i = 0; i < n; i++) {
    const x = undistorted[2 * i] as number;
    if (Number.isFinite(x)) maxR = Math.max(maxR, Math.hypot(x, undistorted[2 * i + 1] as number));
  }
  const { cos: COS, sin: SIN } = TRIG.get(thetaBins) as ReturnType<typeof trig>;
  const THETA_BINS = thetaBins;
  const rhoOffsetPx = maxR + RHO_BIN_PX;
  const rhoBins = Math.ceil((2 * rhoOffsetPx) / RHO_BIN_PX) + 1;
  const votes = new Uint32Array(rhoBins * THETA_BINS);
  for (let i = 0; i < n; i++) {
    const x = undistorted[2 * i] as number;
    const y = undistorted[2 * i + 1] as number;
    if (!Number.isFinite(x)) continue;
    for (let t = 0; t < THETA_BINS; t++) {
      const rho = x * (COS[t] as number) + y * (SIN[t] as number);
      const bin = Math.round((rho + rhoOffsetPx) / RHO_BIN_PX);
      votes[bin * THETA_BINS + t] = (votes[bin * THETA_BINS + t] as number) + 1;
    }
  }
  return { votes, rhoBins, rhoOffsetPx, points: undistorted, zoom };
}

/**
 * Straightness score of a lens: the votes in the 40 fullest Hough cells per
 * point. A line made straight puts its pixels into one cell (and its
 * neighbours), so the score grows as the long pitch lines straighten.
 */
export function straightnessScore(points: PointList, lens: DivisionLens): number {
  const { votes } = houghVotes(points, lens, 720);
  const top = new Uint32Array(40);
  for (let i = 0; i < votes.length; i++) {
    const a = votes[i] as number;
    if (a <= (top[0] as number)) continue;
    // keep `top` sorted ascending; replace its smallest
    let j = 0;
    while (j + 1 < top.length && (top[j + 1] as number) < a) {
      top[j] = top[j + 1] as number;
      j++;
    }
    top[j] = a;
  }
  let s = 0;
  for (const a of top) s += a;
  return s / (points.length / 2);
}

/** Options of {@link estimateLensFromLines}. */
export interface LensSearchOptions {
  /** λ searched in `[min, max]`. @defaultValue [-0.6, 0.2] */
  lambdaRange?: [number, number];
  /** Points used at most (subsampled evenly). @defaultValue 12000 */
  maxPoints?: number;
}

/**
 * The division-model λ whose undistortion makes the pitch lines straightest,
 * one λ for all the point sets given (the cameras of a rig are one model: their
 * lines are pooled, which steadies the estimate when one camera sees few):
 * a coarse grid over the range, then two finer grids around the best.
 * The lens centre is the image centre; radii are normalised by half the diagonal.
 */
export function estimateLensFromLines(
  pointSets: readonly PointList[],
  widthPx: number,
  heightPx: number,
  options: LensSearchOptions = {},
): { lens: DivisionLens; score: number; pinholeScore: number } {
  const [lo, hi] = options.lambdaRange ?? [-0.6, 0.2];
  const maxPoints = options.maxPoints ?? 12_000;
  const sets = pointSets
    .filter((points) => points.length >= 2)
    .map((points) => {
      const n = points.length / 2;
      const stride = Math.max(1, Math.ceil(n / maxPoints));
      const sample: number[] = [];
      for (let i = 0; i < n; i += stride) sample.push(points[2 * i] as number, points[2 * i + 1] as number);
      return Float64Array.from(sample);
    });
  const base = { cx: (widthPx - 1) / 2, cy: (heightPx - 1) / 2, normPx: Math.hypot(widthPx, heightPx) / 2 };
  const score = (lambda: number) => sets.reduce((sum, pts) => sum + straightnessScore(pts, { ...base, lambda }), 0);
  let best = 0;
  let bestScore = -1;
  const grid = (from: number, to: number, steps: number) => {
    for (let i = 0; i <= steps; i++) {
      const lambda = from + ((to - from) * i) / steps;
      const s = score(lambda);
      if (s > bestScore) {
        bestScore = s;
        best = lambda;
      }
    }
  };
  const coarse = (hi - lo) / 16;
  grid(lo, hi, 16);
  grid(best - coarse, best + coarse, 10);
  const fine = coarse / 5;
  grid(best - fine, best + fine, 8);
  return { lens: { ...base, lambda: best }, score: bestScore, pinholeScore: score(0) };
}
