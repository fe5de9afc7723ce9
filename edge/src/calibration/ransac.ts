/**
 * Robust homography: RANSAC over minimal 4-point samples (Fischler & Bolles
 * 1981; Hartley & Zisserman Algorithm 4.6) with the adaptive number of
 * iterations `N = log(1 − p) / log(1 − wˢ)`, then a normalised DLT refit on
 * all inliers of the best sample. Sampling uses a seeded PRNG, so the same
 * input gives the same answer.
 */
import { PolyvisionError, ValidationError } from '@polyvision/shared';
import { homographyDlt, type Point2, transferError } from './dlt.ts';

/** Options of {@link homographyRansac}. */
export interface RansacOptions {
  /** Inlier threshold on the transfer error, target units (pixels). @defaultValue 2 */
  thresholdPx?: number;
  /** Confidence that one sample is all inliers. @defaultValue 0.999 */
  confidence?: number;
  /** Upper bound on iterations. @defaultValue 2000 */
  maxIterations?: number;
  /** PRNG seed. @defaultValue 1 */
  seed?: number;
  /** Smallest share of the points the best consensus must hold (feature matches carry more outliers than clicked pairs). @defaultValue 0.5 */
  minInlierRatio?: number;
}

/** A robust estimate. */
export interface RansacResult {
  /** Row-major 3×3, H[8] = 1. */
  homography: number[];
  /** Indices of the inlier correspondences. */
  inliers: number[];
  /** Root mean square transfer error over the inliers. */
  rmsErrorPx: number;
  iterations: number;
}

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Estimates `dst ~ H·src` robustly.
 *
 * @throws ValidationError `calibration_too_few_points` (< 4 pairs);
 *   PolyvisionError `calibration_no_consensus` when fewer than 4 inliers
 *   (or under `minInlierRatio` of the points) agree on any homography.
 */
export function homographyRansac(
  src: readonly Point2[],
  dst: readonly Point2[],
  options: RansacOptions = {},
): RansacResult {
  const threshold = options.thresholdPx ?? 2;
  const confidence = options.confidence ?? 0.999;
  const maxIterations = options.maxIterations ?? 2000;
  if (src.length !== dst.length || src.length < 4) {
    throw new ValidationError(
      'calibration_too_few_points',
      `a homography needs at least 4 point pairs (got ${src.length} source and ${dst.length} target points)`,
    );
  }
  const random = mulberry32(options.seed ?? 1);
  const n = src.length;
  let best: number[] = [];
  let needed = maxIterations;
  let iterations = 0;
  for (; iterations < Math.min(needed, maxIterations); iterations++) {
    const sample = new Set<number>();
    while (sample.size < 4) sample.add(Math.floor(random() * n));
    const idx = [...sample];
    let h: number[];
    try {
      h = homographyDlt(
        idx.map((i) => src[i] as Point2),
        idx.map((i) => dst[i] as Point2),
      );
    } catch {
      continue;
    }
    const inliers: number[] = [];
    for (let i = 0; i < n; i++) if (transferError(h, src[i] as Point2, dst[i] as Point2) < threshold) inliers.push(i);
    if (inliers.length > best.length) {
      best = inliers;
      const w = inliers.length / n;
      needed = w >= 1 ? 1 : Math.ceil(Math.log(1 - confidence) / Math.log(1 - w ** 4));
    }
  }
  if (best.length < 4 || best.length < n * (options.minInlierRatio ?? 0.5)) {
    throw new PolyvisionError(
      'calibration_no_consensus',
      `no homography fits enough points: best consensus ${best.length} of ${n} within ${threshold} px`,
      { details: { inliers: best.length, points: n, threshold_px: threshold } },
    );
  }
  // Refit on the inliers, then take the inliers of the refit (one round).
  let h = homographyDlt(
    best.map((i) => src[i] as Point2),
    best.map((i) => dst[i] as Point2),
  );
  const refit: number[] = [];
  for (let i = 0; i < n; i++) if (transferError(h, src[i] as Point2, dst[i] as Point2) < threshold) refit.push(i);
  if (refit.length >= best.length) {
    best = refit;
    h = homographyDlt(
      best.map((i) => src[i] as Point2),
      best.map((i) => dst[i] as Point2),
    );
  }
  const sq = best.reduce((s, i) => s + transferError(h, src[i] as Point2, dst[i] as Point2) ** 2, 0);
  return { homography: h, inliers: best, rmsErrorPx: Math.sqrt(sq / best.length), iterations };
}
