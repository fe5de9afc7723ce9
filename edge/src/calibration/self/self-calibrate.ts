/**
 * Self-calibration of a two-camera rig from its footage (`polyvision edge
 * calibrate`): no point pairs, only the videos.
 *
 * 1. Both videos are probed (same size and rate required) and sampled
 *    (video-samples.ts); a black or frozen camera is refused.
 * 2. Background frames: the median of frames seconds apart (players vanish).
 * 3. Lens: per camera, the division-model λ that makes the pitch lines
 *    straightest (pitch-lines.ts), stored as Brown–Conrady k1 k2 k3.
 * 4. Geometry: ORB features of the two background frames matched
 *    (features.ts), undistorted, and a homography camera B → camera A fitted by
 *    RANSAC + normalised DLT (ransac.ts). For cameras mounted together (a
 *    rotating pair) it holds for every depth; otherwise only for the plane its
 *    matches lie on: with `homographyFrom: 'pitch'` (the default) it is fitted
 *    again (and the lens re-chosen) on matches in the pitch part of the overlap
 *    (pitch-plane.ts), then grown by the first matches on the same plane.
 * 5. Panorama (panorama-frame.ts): the plane half way between the cameras
 *    (panorama-plane.ts), on a cylinder unless a plane keeps the picture whole
 *    where the cylinder cannot (panorama-layout.ts), scaled so the pitch keeps
 *    at least the source pixel density (capped by `maxPanoramaWidthPx`),
 *    cropped to the pitch with a margin, then to the largest rectangle the
 *    cameras see that keeps the pitch lines (panorama-crop.ts).
 * 6. Time offset: motion energy in the overlap, cross-correlated (time-offset.ts).
 * 7. Colour: per-camera RGB gains that meet in the middle over the overlap.
 *
 * The pitch frame (metres) is not measured: `quality.pitch_registered` is false
 * and `pitch_to_panorama` only lays the pitch rectangle over the panorama;
 * point pairs with `pitch_m` (calibrateVenue) register it.
 */
import { basename } from 'node:path';
import {
  type Matrix3x3,
  mat3Rows,
  normalizeHomography,
  PolyvisionError,
  ValidationError,
  type VenueCalibration,
} from '@polyvision/shared';
import { type Point2, transferError } from '../dlt.ts';
import { homographyRansac, type RansacResult } from '../ransac.ts';
import { medianFrame } from './background-frame.ts';
import { type FeatureMatch, matchFeatures } from './features.ts';
import { brownFromDivision, type DivisionLens, distortDivision, undistortDivision } from './lens-distortion.ts';
import { dominantLineDeviation, type LineDeviation } from './line-straightness.ts';
import type { PanoramaCrop } from './panorama-crop.ts';
import { framePanorama } from './panorama-frame.ts';
import { percentile } from './panorama-layout.ts';
import { apply3, homographySqrt, inv3, localScale, mul3 } from './panorama-plane.ts';
import { estimateLensFromLines, linePixels } from './pitch-lines.ts';
import { pitchPlaneMatches } from './pitch-plane.ts';
import { alignSeam, type SeamCamera, warpAt } from './seam-alignment.ts';
import { estimateTimeOffset, motionEnergy } from './time-offset.ts';
import { probeCamera, readVideoSamples, THUMB_HEIGHT_PX, THUMB_WIDTH_PX, type VideoSamples } from './video-samples.ts';

/** Options of {@link selfCalibrate}. */
export interface SelfCalibrationOptions {
  /** @defaultValue 'venue' */
  venueId?: string;
  /** Camera ids in the order of the paths. @defaultValue the file stems, made safe (`tsukuba-left`) */
  cameraIds?: string[];
  /** Pitch size, metres (only placed over the panorama, see `pitch_registered`). @defaultValue 105 × 68 */
  pitch?: { length_m: number; width_m: number };
  /** Frames per camera for the background. @defaultValue 7 */
  keyFrameCount?: number;
  /** ORB features per camera. @defaultValue 4000 */
  maxFeatures?: number;
  /** Largest time offset searched, seconds. @defaultValue 2 */
  maxTimeOffsetS?: number;
  /** Panorama pixels per source pixel aimed at on the pitch (smallest over the pitch lines). @defaultValue 1 */
  pixelDensity?: number;
  /** Upper bound on the panorama's width; the density gives way above it. @defaultValue 7680 */
  maxPanoramaWidthPx?: number;
  /** Upper bound on the panorama's pixels (before the crop); the density gives way above it. @defaultValue none */
  maxPanoramaPixels?: number;
  /** Smallest number of RANSAC inliers accepted. @defaultValue 20 */
  minInliers?: number;
  /**
   * Which matches the homography camera B → A (and the lens) is fitted on: `overlap`, every ORB match of the
   * overlap (on a real rig mostly the stands and trees above the pitch), or `pitch`, then again on matches in the
   * pitch part of the overlap (pitch-plane.ts) with the overlap's on the same plane: the pitch plane's
   * homography, exact for the pitch whether or not the cameras share an optical centre (kept only with at least
   * `minInliers` inliers, else `overlap`'s, with a warning). @defaultValue 'pitch'
   */
  homographyFrom?: 'overlap' | 'pitch';
  /**
   * The panorama: `planar`, the middle plane itself; `cylindrical`, that plane wrapped on a cylinder whose
   * focal length gives the smallest panorama that keeps the pitch's density (panorama-layout.ts); `auto`, the
   * cylinder unless its crop must keep black pixels where the plane's need not (panorama-frame.ts).
   * @defaultValue 'auto'
   */
  projection?: 'auto' | 'planar' | 'cylindrical';
  /** Align the seam (optical flow + least-difference seam, seam-alignment.ts). @defaultValue true */
  alignSeam?: boolean;
  /**
   * Crop the panorama to the largest rectangle the cameras see that keeps the pitch lines
   * (panorama-crop.ts): no black bands or wedges. @defaultValue true
   */
  cropToCoverage?: boolean;
  signal?: AbortSignal;
  /** Called at the start of each step. */
  onStep?: (step: string) => void;
  /** Called with a line worth a log's warning (e.g. unseen panorama pixels kept to keep the pitch). */
  onWarning?: (line: string) => void;
}

/** The calibration and what was measured on the way. */
export interface SelfCalibration {
  venue: VenueCalibration;
  /** Per camera: the division model found and the Brown fit's worst radial misfit, pixels. */
  lenses: Array<{
    cameraId: string;
    lambda: number;
    brownFitErrorPx: number;
    linePixels: number;
    line: LineDeviation | null;
  }>;
  /** The inlier matches, camera A and B pixels as recorded (distorted). */
  inlierMatches: Array<{ a: Point2; b: Point2 }>;
  timeOffset: { lagFrames: number; correlation: number; correlationAtZero: number };
  /**
   * The seam alignment (null when turned off or the overlap is too thin): the seam error of the
   * inlier matches with the homographies alone (the venue's `quality` holds it after the warp),
   * the mean grey difference over the overlap before/after, and the displacement applied.
   */
  seamAlignment: {
    seamErrorBeforePx: { mean: number; p95: number };
    meanDifference: { before: number; after: number };
    shiftPx: { median: number; max: number };
  } | null;
  /**
   * The crop to what the cameras see (null when turned off): the panorama size before, the rectangle kept
   * (pixels of the uncropped panorama), the unseen-pixel fraction before/after, the share of pitch-line
   * pixels kept, and whether keeping the pitch forced unseen (filled) pixels into it.
   */
  crop: (PanoramaCrop & { before: { widthPx: number; heightPx: number } }) | null;
}

/**
 * How far camera B is turned about the viewing axis against camera A, degrees:
 * the direction of B's horizontal through the image centre, mapped into A by `hBA`.
 */
export function relativeRotationDeg(hBA: readonly number[], widthPx: number, heightPx: number): number {
  const cx = (widthPx - 1) / 2;
  const cy = (heightPx - 1) / 2;
  const d = widthPx / 20;
  const [x0, y0] = apply3(hBA as number[], cx - d, cy);
  const [x1, y1] = apply3(hBA as number[], cx + d, cy);
  return (Math.atan2(y1 - y0, x1 - x0) * 180) / Math.PI;
}

const SAFE_ID = /[^a-z0-9_-]+/g;

function cameraIdOf(path: string, index: number): string {
  const stem = basename(path)
    .replace(/\.[^.]+$/, '')
    .toLowerCase()
    .replace(SAFE_ID, '-')
    .replace(/^-+/, '');
  return /^[a-z0-9]/.test(stem) ? stem.slice(0, 64) : `camera-${index}`;
}

/** Luma statistics of a grey frame: mean and standard deviation. */
function lumaStats(gray: Uint8Array): { mean: number; sd: number } {
  let s = 0;
  let s2 = 0;
  for (let i = 0; i < gray.length; i += 7) {
    const v = gray[i] as number;
    s += v;
    s2 += v * v;
  }
  const n = Math.ceil(gray.length / 7);
  const mean = s / n;
  return { mean, sd: Math.sqrt(Math.max(0, s2 / n - mean * mean)) };
}

function checkCamera(samples: VideoSamples, background: Uint8Array): void {
  const { mean, sd } = lumaStats(background);
  if (mean < 12 || sd < 3) {
    throw new ValidationError(
      'calibration_camera_blank',
      `${samples.path} shows no picture (mean luma ${mean.toFixed(1)}, spread ${sd.toFixed(1)} of 255): is the camera black or covered?`,
      { details: { path: samples.path, mean_luma: mean, luma_sd: sd } },
    );
  }
  const all = new Uint8Array(THUMB_WIDTH_PX * THUMB_HEIGHT_PX).fill(1);
  const energy = motionEnergy(samples.thumbnails, all);
  let moving = 0;
  for (const e of energy) if (e > 0.02) moving++;
  if (moving < energy.length / 4) {
    throw new ValidationError(
      'calibration_camera_frozen',
      `${samples.path} is frozen: its picture changes in only ${moving} of ${energy.length} frame steps (a still image or a stalled camera)`,
      { details: { path: samples.path, changing_steps: moving, steps: energy.length } },
    );
  }
}

/**
 * Calibrates a two-camera rig from its videos.
 *
 * @param cameraPaths - exactly two videos of the same size and frame rate, whose views overlap.
 * @throws ValidationError `calibration_unsupported_rig` (not two cameras),
 *   `calibration_unreadable_camera`, `calibration_mismatched_cameras` (size or rate differ),
 *   `calibration_camera_blank`, `calibration_camera_frozen`, `calibration_too_few_features`
 *   (a dark or featureless picture), `calibration_no_overlap` (no consistent matches between the views);
 *   PolyvisionError `calibration_decode_failed`, `aborted`.
 */
export async function selfCalibrate(
  cameraPaths: readonly string[],
  options: SelfCalibrationOptions = {},
): Promise<SelfCalibration> {
  const started = performance.now();
  const step = options.onStep ?? (() => {});
  const signal = options.signal;
  if (cameraPaths.length !== 2) {
    throw new ValidationError(
      'calibration_unsupported_rig',
      `self-calibration takes exactly 2 cameras (got ${cameraPaths.length}); calibrate larger rigs from point pairs`,
    );
  }
  let ids = options.cameraIds ? [...options.cameraIds] : cameraPaths.map(cameraIdOf);
  if (new Set(ids).size !== ids.length) ids = ids.map((_, i) => `camera-${i}`);

  step('probe');
  const formats = await Promise.all(cameraPaths.map((p) => probeCamera(p, signal)));
  const [fa, fb] = formats as [(typeof formats)[0], (typeof formats)[0]];
  if (fa.widthPx !== fb.widthPx || fa.heightPx !== fb.heightPx) {
    throw new ValidationError(
      'calibration_mismatched_cameras',
      `the cameras differ in size: ${fa.path} is ${fa.widthPx}×${fa.heightPx}, ${fb.path} is ${fb.widthPx}×${fb.heightPx} (a rig's cameras must be the same model and mode)`,
    );
  }
  if (Math.abs(fa.fps - fb.fps) > 0.01) {
    throw new ValidationError(
      'calibration_mismatched_cameras',
      `the cameras differ in frame rate: ${fa.path} runs at ${fa.fps} fps, ${fb.path} at ${fb.fps} fps`,
    );
  }
  const width = fa.widthPx;
  const height = fa.heightPx;

  step('decode');
  const samples = await Promise.all(
    formats.map((f) => readVideoSamples(f, { keyFrameCount: options.keyFrameCount ?? 7, signal })),
  );
  signal?.throwIfAborted();

  step('background');
  const gray = samples.map((s) => medianFrame(s.keyFrames));
  for (const [i, s] of samples.entries()) checkCamera(s, gray[i] as Uint8Array);
  const halfW = Math.floor(width / 2);
  const halfH = Math.floor(height / 2);
  const colour = samples.map((s) => medianFrame(s.keyFramesRgbHalf));

  step('lens');
  const linePoints = colour.map((rgb) =>
    Float64Array.from(linePixels(rgb, halfW, halfH), (v, k) =>
      k % 2 === 0 ? v * (width / halfW) : v * (height / halfH),
    ),
  );
  const pinhole: DivisionLens = {
    lambda: 0,
    cx: (width - 1) / 2,
    cy: (height - 1) / 2,
    normPx: Math.hypot(width, height) / 2,
  };
  const enoughLines = linePoints.reduce((n, p) => n + p.length / 2, 0) >= 1_000;
  // One lens model for the rig's cameras (the same model), pooled over both cameras' lines.
  const plumbLens = enoughLines ? estimateLensFromLines(linePoints, width, height).lens : pinhole;
  signal?.throwIfAborted();

  step('features');
  const found = await matchFeatures(
    { widthPx: width, heightPx: height, data: gray[0] as Uint8Array },
    { widthPx: width, heightPx: height, data: gray[1] as Uint8Array },
    { maxFeatures: options.maxFeatures ?? 4000 },
  );
  const minFeatures = 200;
  if (found.featuresA < minFeatures || found.featuresB < minFeatures) {
    const which = found.featuresA < found.featuresB ? fa.path : fb.path;
    throw new ValidationError(
      'calibration_too_few_features',
      `${which} has too little texture to calibrate (${Math.min(found.featuresA, found.featuresB)} features, at least ${minFeatures} needed): too dark, out of focus or covered?`,
      { details: { features: [found.featuresA, found.featuresB] } },
    );
  }
  // The lens, refined on the matches: for the right λ one homography maps camera B onto A (exactly for
  // cameras turning about one point). Each candidate is fitted by RANSAC and scored by the truncated
  // quadratic transfer error over all matches (MSAC, Torr & Zisserman 2000); the plumb-line λ seeds the search.
  const minInliers = options.minInliers ?? 20;
  const noOverlap = (detail: string, matches: number) =>
    new ValidationError(
      'calibration_no_overlap',
      `the cameras do not overlap enough to be stitched: ${detail} (the views must share a strip of the pitch with lines or stands in it)`,
      { details: { matches, features: [found.featuresA, found.featuresB] } },
    );
  const fitWith = (l: DivisionLens, matches: readonly FeatureMatch[]) => {
    const pairs = matches
      .map((m) => ({
        m,
        a: undistortDivision(l, m.a[0], m.a[1]) as Point2,
        b: undistortDivision(l, m.b[0], m.b[1]) as Point2,
      }))
      .filter((p) => Number.isFinite(p.a[0]) && Number.isFinite(p.b[0]));
    if (pairs.length < minInliers) return { pairs, fit: null, cost: Number.POSITIVE_INFINITY };
    try {
      const fit = homographyRansac(
        pairs.map((p) => p.b),
        pairs.map((p) => p.a),
        { thresholdPx: 3, maxIterations: 5000, minInlierRatio: 0.2 },
      );
      let cost = 0;
      for (const p of pairs) cost += Math.min(9, transferError(fit.homography, p.b, p.a) ** 2);
      return { pairs, fit, cost: cost / pairs.length };
    } catch (error) {
      if (error instanceof PolyvisionError) return { pairs, fit: null, cost: Number.POSITIVE_INFINITY, error };
      throw error;
    }
  };
  const searchLens = (start: DivisionLens, matches: readonly FeatureMatch[]) => {
    let lens = start;
    let best = fitWith(lens, matches);
    if (best.fit && best.fit.inliers.length >= 30) {
      for (const step of [0.05, 0.01]) {
        const centre = lens.lambda;
        for (let k = -4; k <= 4; k++) {
          const candidate = { ...lens, lambda: centre + k * step };
          if (k === 0 || candidate.lambda < -0.7 || candidate.lambda > 0.3) continue;
          const tried = fitWith(candidate, matches);
          if (tried.cost < best.cost) {
            best = tried;
            lens = candidate;
          }
        }
      }
    }
    return { lens, best };
  };
  let { lens, best } = searchLens(plumbLens, found.matches);
  if (best.pairs.length < minInliers) {
    throw noOverlap(`only ${best.pairs.length} features match between them`, best.pairs.length);
  }
  if (!best.fit) {
    throw noOverlap((best as { error?: Error }).error?.message ?? 'no homography fits the matches', best.pairs.length);
  }
  if (best.fit.inliers.length < minInliers) {
    throw noOverlap(
      `only ${best.fit.inliers.length} of ${best.pairs.length} matches agree on one geometry`,
      best.pairs.length,
    );
  }
  const turnDeg = relativeRotationDeg(best.fit.homography, width, height);
  if (Math.abs(turnDeg) > 45) {
    throw new ValidationError(
      'calibration_rotated_camera',
      `${fb.path} is turned ${turnDeg.toFixed(0)}° against ${fa.path} about the viewing axis (at most 45° is stitched): mount the cameras upright, or rotate the footage first`,
      { details: { rotation_deg: turnDeg } },
    );
  }
  if ((options.homographyFrom ?? 'pitch') === 'pitch') {
    step('pitch plane');
    const onPitch = await pitchPlaneMatches(
      { widthPx: width, heightPx: height, data: gray[0] as Uint8Array },
      { widthPx: width, heightPx: height, data: gray[1] as Uint8Array },
      lens,
      best.fit.homography,
      { maxFeatures: options.maxFeatures ?? 4000 },
    );
    // The lens is chosen on the turf's matches and the overlap's together: the turf's plane is the larger
    // consensus where the cameras are apart, and every match agrees where they turn about one point.
    const refined = searchLens(lens, [...onPitch, ...found.matches]);
    const pitchFit = refined.best.fit;
    if (pitchFit && pitchFit.inliers.length >= minInliers) {
      lens = refined.lens;
      // The overlap's matches that lie on the same plane join (all of them for cameras at one optical centre,
      // few of the stands' for cameras apart): the fit then spans the whole overlap wherever it can.
      const onPlane = found.matches.filter((m) => {
        const a = undistortDivision(lens, m.a[0], m.a[1]) as Point2;
        const b = undistortDivision(lens, m.b[0], m.b[1]) as Point2;
        return Number.isFinite(a[0]) && Number.isFinite(b[0]) && transferError(pitchFit.homography, b, a) < 3;
      });
      const grown = fitWith(lens, [...onPitch, ...onPlane]);
      best = grown.fit && grown.fit.inliers.length >= pitchFit.inliers.length ? grown : refined.best;
    } else
      options.onWarning?.(`pitch plane: ${onPitch.length} matches on the turf, too few: kept the overlap's homography`);
  }
  const { pairs } = best;
  const fit = best.fit as RansacResult;
  const brown = brownFromDivision(lens, Math.hypot(width, height) / 2);
  const lenses = linePoints.map((pts, i) => ({
    cameraId: ids[i] as string,
    lens,
    brown,
    pts,
    line: dominantLineDeviation(pts, lens),
  }));
  const hBA = fit.homography;
  step('panorama');
  let g: number[];
  try {
    g = homographySqrt(hBA);
  } catch (error) {
    throw new ValidationError(
      'calibration_no_overlap',
      `the matched views give an impossible geometry (${(error as Error).message}): is a camera mirrored or upside down?`,
      { cause: error },
    );
  }
  const toMid = [inv3(g), g]; // undistorted A → mid, undistorted B → mid
  // Pitch-line pixels in the middle plane: the panorama box and the density are taken over them.
  const pitchMid: Array<{ cam: number; x: number; y: number; scale: number }> = [];
  lenses.forEach((l, cam) => {
    const n = l.pts.length / 2;
    const stride = Math.max(1, Math.floor(n / 4000));
    for (let i = 0; i < n; i += stride) {
      const u = l.pts[2 * i] as number;
      const v = l.pts[2 * i + 1] as number;
      const [x0, y0] = undistortDivision(l.lens, u, v);
      const [x1] = undistortDivision(l.lens, u + 1, v);
      const [, y2] = undistortDivision(l.lens, u, v + 1);
      const [mx, my] = apply3(toMid[cam] as number[], x0, y0);
      if (!Number.isFinite(mx) || !Number.isFinite(x1) || !Number.isFinite(y2)) continue;
      const lensScale = Math.sqrt(Math.abs((x1 - x0) * (y2 - y0)));
      pitchMid.push({ cam, x: mx, y: my, scale: lensScale * localScale(toMid[cam] as number[], x0, y0) });
    }
  });
  if (pitchMid.length < 100) {
    throw new ValidationError(
      'calibration_too_few_features',
      'no pitch lines found in the cameras (white lines on turf): cannot place the panorama over the pitch',
    );
  }
  if (options.cropToCoverage !== false) step('crop');
  const framed = framePanorama({
    pitchMid,
    toMid,
    lenses: lenses.map((l) => l.lens),
    cameraWidthPx: width,
    cameraHeightPx: height,
    projection: options.projection ?? 'auto',
    pixelDensity: options.pixelDensity ?? 1,
    maxWidthPx: options.maxPanoramaWidthPx ?? 7680,
    ...(options.maxPanoramaPixels !== undefined ? { maxPixels: options.maxPanoramaPixels } : {}),
    crop: options.cropToCoverage !== false,
  });
  const { imageToPano, cylinder, projection, widthPx: panoW, heightPx: panoH, crop } = framed;
  if (crop?.filled) {
    options.onWarning?.(
      `panorama ${panoW}×${panoH}: no rectangle the cameras fully see keeps the pitch; kept the pitch, ${(100 * crop.unseenFraction).toFixed(2)} % of its pixels are unseen (filled)`,
    );
  }
  /** Undistorted pixel of camera `cam` → panorama pixel. */
  const toPanorama = (cam: number, u: number, v: number) =>
    projection.fromPlane(...apply3(imageToPano[cam] as number[], u, v));

  // Seam error: where the two sides of each inlier match land in the panorama.
  const seam: number[] = [];
  for (const i of fit.inliers) {
    const p = pairs[i] as (typeof pairs)[0];
    const [ax, ay] = toPanorama(0, p.a[0], p.a[1]);
    const [bx, by] = toPanorama(1, p.b[0], p.b[1]);
    seam.push(Math.hypot(ax - bx, ay - by));
  }
  seam.sort((a, b) => a - b);

  step('seam alignment');
  const seamCamera = (cam: number): SeamCamera => ({
    gray: gray[cam] as Uint8Array,
    widthPx: width,
    heightPx: height,
    lens: (lenses[cam] as (typeof lenses)[0]).lens,
    imageToPano: imageToPano[cam] as number[],
    projection,
  });
  const alignment =
    options.alignSeam === false
      ? null
      : await alignSeam(seamCamera(0), seamCamera(1), { widthPx: panoW, heightPx: panoH });
  signal?.throwIfAborted();
  // The same matches through the aligned mapping: camera B's side is where the warped map shows it.
  const seamAligned: number[] = [];
  if (alignment) {
    for (const i of fit.inliers) {
      const p = pairs[i] as (typeof pairs)[0];
      const [ax, ay] = toPanorama(0, p.a[0], p.a[1]);
      const [bx, by] = toPanorama(1, p.b[0], p.b[1]);
      // The panorama pixel q with q + warp(q) = b, by fixed-point iteration (the warp is smooth and small).
      let qx = bx;
      let qy = by;
      for (let it = 0; it < 8; it++) {
        const [dx, dy] = warpAt(alignment.warp, qx, qy);
        qx = bx - dx;
        qy = by - dy;
      }
      seamAligned.push(Math.hypot(ax - qx, ay - qy));
    }
    seamAligned.sort((a, b) => a - b);
  }
  const seamFinal = alignment ? seamAligned : seam;

  // Which recorded pixel of a camera a panorama pixel shows (the stitcher's mapping), or null.
  const inside = (cam: number, x: number, y: number) => {
    const [u, v] = apply3(inv3(imageToPano[cam] as number[]), ...projection.toPlane(x, y));
    if (!Number.isFinite(u)) return null;
    const [du, dv] = distortDivision((lenses[cam] as (typeof lenses)[0]).lens, u, v);
    return du >= 0 && du <= width - 1 && dv >= 0 && dv <= height - 1 ? ([du, dv] as const) : null;
  };

  step('overlap and colour');
  let both = 0;
  let total = 0;
  const sums = [
    [0, 0, 0],
    [0, 0, 0],
  ];
  const gridStep = Math.max(4, Math.round(panoW / 400));
  for (let y = 0; y < panoH; y += gridStep) {
    for (let x = 0; x < panoW; x += gridStep) {
      total++;
      const pa = inside(0, x, y);
      const pb = inside(1, x, y);
      if (!pa || !pb) continue;
      both++;
      const ia = (Math.min(halfH - 1, Math.round(pa[1] / 2)) * halfW + Math.min(halfW - 1, Math.round(pa[0] / 2))) * 3;
      const ib = (Math.min(halfH - 1, Math.round(pb[1] / 2)) * halfW + Math.min(halfW - 1, Math.round(pb[0] / 2))) * 3;
      for (let c = 0; c < 3; c++) {
        (sums[0] as number[])[c] = ((sums[0] as number[])[c] as number) + ((colour[0] as Uint8Array)[ia + c] as number);
        (sums[1] as number[])[c] = ((sums[1] as number[])[c] as number) + ((colour[1] as Uint8Array)[ib + c] as number);
      }
    }
  }
  const gains = [0, 1, 2].map((c) => {
    const a = (sums[0] as number[])[c] as number;
    const b = (sums[1] as number[])[c] as number;
    return a > 0 && b > 0 ? Math.sqrt(b / a) : 1;
  });
  const colorGains: Array<[number, number, number]> = [
    [gains[0] as number, gains[1] as number, gains[2] as number],
    [1 / (gains[0] as number), 1 / (gains[1] as number), 1 / (gains[2] as number)],
  ];

  step('time offset');
  const overlapMask = (cam: number) => {
    const mask = new Uint8Array(THUMB_WIDTH_PX * THUMB_HEIGHT_PX);
    const other = 1 - cam;
    const lens = (lenses[cam] as (typeof lenses)[0]).lens;
    for (let ty = 0; ty < THUMB_HEIGHT_PX; ty++) {
      for (let tx = 0; tx < THUMB_WIDTH_PX; tx++) {
        const [u, v] = undistortDivision(
          lens,
          ((tx + 0.5) * width) / THUMB_WIDTH_PX,
          ((ty + 0.5) * height) / THUMB_HEIGHT_PX,
        );
        if (!Number.isFinite(u)) continue;
        const [px, py] = toPanorama(cam, u, v);
        if (Number.isFinite(px) && inside(other, px, py)) mask[ty * THUMB_WIDTH_PX + tx] = 1;
      }
    }
    return mask;
  };
  const energyA = motionEnergy((samples[0] as VideoSamples).thumbnails, overlapMask(0));
  const energyB = motionEnergy((samples[1] as VideoSamples).thumbnails, overlapMask(1));
  const maxLag = Math.round((options.maxTimeOffsetS ?? 2) * fa.fps);
  const offset = estimateTimeOffset(energyA, energyB, Math.min(maxLag, Math.floor(energyA.length / 3)));
  const lagS = offset.lagFrames / fa.fps;

  // Placeholder pitch frame: the pitch rectangle laid over the panorama (not metres: pitch_registered false).
  const pitch = options.pitch ?? { length_m: 105, width_m: 68 };
  const pitchToPano = [panoW / pitch.length_m, 0, panoW / 2, 0, -panoH / pitch.width_m, panoH / 2, 0, 0, 1];
  const rows = (m: number[]): Matrix3x3 => mat3Rows(normalizeHomography(m));
  const identity: Matrix3x3 = [
    [1, 0, 0],
    [0, 1, 0],
    [0, 0, 1],
  ];
  const venue: VenueCalibration = {
    version: 1,
    venue_id: options.venueId ?? 'venue',
    pitch,
    cameras: lenses.map((l, i) => ({
      id: l.cameraId,
      width_px: width,
      height_px: height,
      intrinsics: l.brown.intrinsics,
      distortion: l.brown.distortion,
      rotation: identity,
      translation_m: [0, 0, 0],
      position_m: [0, 0, 0],
      pitch_to_image: rows(mul3(inv3(imageToPano[i] as number[]), pitchToPano)),
      image_to_panorama: rows(imageToPano[i] as number[]),
      division_model: { lambda: l.lens.lambda, center_px: [l.lens.cx, l.lens.cy], norm_px: l.lens.normPx },
      time_offset_s: i === 0 ? Math.max(0, -lagS) : Math.max(0, lagS),
      color_gains: colorGains[i] as [number, number, number],
      ...(alignment && i === 1 ? { panorama_warp: alignment.warp } : {}),
    })),
    panorama: {
      projection: cylinder ? 'cylindrical' : 'planar',
      ...(cylinder ? { cylinder: { focal_px: cylinder.focalPx, center_px: [cylinder.cx, cylinder.cy] } } : {}),
      width_px: panoW,
      height_px: panoH,
      intrinsics: { fx: framed.scale * width, fy: framed.scale * width, cx: panoW / 2, cy: panoH / 2 },
      rotation: identity,
      translation_m: [0, 0, 0],
      pitch_to_panorama: rows(pitchToPano),
      panorama_to_pitch: rows(inv3(pitchToPano)),
      ...(alignment ? { seam_x_px: alignment.seamXPx, seam_feather_px: alignment.featherPx } : {}),
    },
    quality: {
      method: 'features',
      pitch_registered: false,
      reprojection_error_px: fit.rmsErrorPx,
      seam_error_mean_px: seamFinal.reduce((a, b) => a + b, 0) / Math.max(1, seamFinal.length),
      seam_error_p95_px: percentile(seamFinal, 0.95),
      matches: pairs.length,
      inliers: fit.inliers.length,
      overlap_fraction: total === 0 ? 0 : both / total,
      time_offset_s: lagS,
      time_offset_correlation: offset.correlation,
      ...(lenses[0]?.line
        ? { line_deviation_px: { distorted: lenses[0].line.distortedPx, undistorted: lenses[0].line.undistortedPx } }
        : {}),
      pixel_density: framed.density,
      calibration_ms: Math.round(performance.now() - started),
      ...(crop ? { unseen_fraction: crop.unseenFraction } : {}),
    },
  };
  return {
    venue,
    lenses: lenses.map((l) => ({
      cameraId: l.cameraId,
      lambda: l.lens.lambda,
      brownFitErrorPx: l.brown.maxFitErrorPx,
      linePixels: l.pts.length / 2,
      line: l.line,
    })),
    inlierMatches: fit.inliers.map((i) => ({
      a: (pairs[i] as (typeof pairs)[0]).m.a,
      b: (pairs[i] as (typeof pairs)[0]).m.b,
    })),
    timeOffset: offset,
    seamAlignment: alignment && {
      seamErrorBeforePx: {
        mean: seam.reduce((a, b) => a + b, 0) / Math.max(1, seam.length),
        p95: percentile(seam, 0.95),
      },
      meanDifference: alignment.meanDifference,
      shiftPx: alignment.shiftPx,
    },
    crop,
  };
}
