/**
 * The stitcher's remap maps and feather masks, computed ONCE per venue
 * calibration (the expensive, per-pixel part), then reused by ffmpeg for
 * every segment.
 *
 * For every panorama pixel `p` and camera `i`, the source pixel is
 * `Hᵢ⁻¹·p` where `Hᵢ` is the camera's `image_to_panorama` homography
 * (venue.json; Hartley & Zisserman §2.3), `p` taken to the panorama's plane
 * first when the panorama is cylindrical (shared `panoramaProjectionOf`). ffmpeg's `remap` filter samples the
 * NEAREST source pixel (its maps hold integers), so the map holds
 * `round(Hᵢ⁻¹·p)`: at most √½ px from the exact position in camera pixels.
 * Pixels whose source falls outside the camera image get 65535, which
 * `remap` paints with its `fill` colour.
 *
 * Feathering (distance-weighted blending, Szeliski, "Image Alignment and
 * Stitching: A Tutorial", §6.2): camera `i`'s weight at `p` is the distance
 * of its source pixel to the nearest image border, capped at `featherPx`;
 * the blended panorama is `Σ wᵢ·Iᵢ / Σ wᵢ`. ffmpeg blends two images at a
 * time (alpha `overlay`, or `maskedmerge`), so the sum is folded left to right:
 * `acc₀ = I₀`, `accₖ = acc₋₁ + (Iₖ − accₖ₋₁)·mₖ` with `mₖ = wₖ / Σⱼ≤ₖ wⱼ`,
 * which gives the same normalised sum.
 *
 * Lens distortion: `image_to_panorama` acts on UNDISTORTED camera pixels, so a
 * camera with Brown–Conrady coefficients gets its source pixel as
 * `distort(H⁻¹·p)` (OpenCV's model with the camera's intrinsics; radii where the
 * polynomial folds back count as unseen), or, when the camera has a
 * `division_model`, its exact closed-form inverse. The feather weight is measured in
 * the recorded (distorted) image.
 */
import { panoramaProjectionOf, pitchMappingOf, ValidationError, type VenueCalibration } from '@polyvision/shared';
import { distortBrown, distortDivision, isPinhole } from '../calibration/self/lens-distortion.ts';
import { warpAt } from '../calibration/self/seam-alignment.ts';
import { frontSide, invertHomography, projectPixel } from './homography.ts';

/**
 * The largest normalised undistorted radius where the Brown–Conrady radial
 * polynomial still grows (beyond it the model folds back and would map far-away
 * panorama pixels into the image); searched up to 10.
 */
function brownRadiusLimit(d: { k1: number; k2: number; k3: number }): number {
  for (let r = 0.01; r <= 10; r += 0.01) {
    const r2 = r * r;
    const slope = 1 + 3 * d.k1 * r2 + 5 * d.k2 * r2 * r2 + 7 * d.k3 * r2 * r2 * r2;
    if (slope <= 0.05) return r - 0.01;
  }
  return 10;
}

/** Value a map holds where the camera does not see the panorama pixel (remap fills it). */
export const UNMAPPED = 65_535;

/** The maps of one camera, each `panoramaWidthPx × panoramaHeightPx`, row-major. */
export interface CameraMaps {
  cameraId: string;
  /** Source column per panorama pixel, or {@link UNMAPPED}. */
  xmap: Uint16Array;
  /** Source row per panorama pixel, or {@link UNMAPPED}. */
  ymap: Uint16Array;
  /** Blend mask 0–255, the alpha of this camera over the cameras before it (camera 0: 255 where it sees). */
  mask: Uint8Array;
  /** Panorama pixels this camera sees. */
  coveredPixels: number;
  /** The smallest panorama rectangle holding every pixel the camera sees (the stitcher warps only this). */
  box: PixelBox;
}

/** A rectangle of panorama pixels. */
export interface PixelBox {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** The maps of a whole rig. */
export interface RemapMaps {
  widthPx: number;
  heightPx: number;
  cameras: CameraMaps[];
  /** Fraction (0–1) of panorama pixels at least one camera sees. */
  coverage: number;
  /** Fraction (0–1) of the panorama pixels that show the pitch which at least one camera sees. */
  pitchCoverage: number;
  /** Panorama pixels two or more cameras see. */
  overlapPixels: number;
}

/** Options of {@link computeRemapMaps}. */
export interface RemapMapOptions {
  /** Feather width in camera pixels: weights grow linearly from the border up to this. @defaultValue 64 */
  featherPx?: number;
  /**
   * Smallest acceptable fraction of the panorama's pitch pixels that the
   * cameras must see; below it the calibration is refused. @defaultValue 0.995
   */
  minPitchCoverage?: number;
}

/**
 * Computes the remap maps and blend masks of every camera.
 *
 * @throws ValidationError `stitch_singular_calibration` when a camera's
 *   `image_to_panorama` is singular; `stitch_calibration_uncovered` when the
 *   cameras see less than `minPitchCoverage` of the pitch in the panorama, or
 *   a camera sees none of it; `stitch_invalid_option` for a bad option.
 */
export function computeRemapMaps(venue: VenueCalibration, options: RemapMapOptions = {}): RemapMaps {
  const featherPx = options.featherPx ?? 64;
  const minPitchCoverage = options.minPitchCoverage ?? 0.995;
  if (!(featherPx >= 1)) {
    throw new ValidationError('stitch_invalid_option', `featherPx=${featherPx}: expected a number ≥ 1`);
  }
  const { width_px: width, height_px: height } = venue.panorama;
  const projection = panoramaProjectionOf(venue.panorama);
  const n = width * height;
  const weights: Float32Array[] = [];
  const cameras: CameraMaps[] = venue.cameras.map((cam) => {
    const inverse = invertHomography(cam.image_to_panorama, `${cam.id} image_to_panorama`);
    const forward = cam.image_to_panorama.flat();
    // Where the camera's centre lands in the panorama: a point known to be in front of it.
    const [cu, cv] = projectPixel(forward, (cam.width_px - 1) / 2, (cam.height_px - 1) / 2, frontSide(forward, 0, 0));
    const side = Number.isFinite(cu) ? frontSide(inverse, cu, cv) : 1;
    const xmap = new Uint16Array(n).fill(UNMAPPED);
    const ymap = new Uint16Array(n).fill(UNMAPPED);
    const weight = new Float32Array(n);
    let covered = 0;
    let x0 = width;
    let y0 = height;
    let x1 = -1;
    let y1 = -1;
    const maxU = cam.width_px - 0.5;
    const maxV = cam.height_px - 0.5;
    const division = cam.division_model
      ? {
          lambda: cam.division_model.lambda,
          cx: cam.division_model.center_px[0],
          cy: cam.division_model.center_px[1],
          normPx: cam.division_model.norm_px,
        }
      : null;
    const lens = division || isPinhole(cam.distortion) ? null : cam.distortion;
    const intr = cam.intrinsics;
    const maxR2 = lens ? brownRadiusLimit(lens) ** 2 : Number.POSITIVE_INFINITY;
    const warp = cam.panorama_warp;
    const warpX1 = warp ? warp.x_px + (warp.cols - 1) * warp.step_px : -1;
    const warpY1 = warp ? warp.y_px + (warp.rows - 1) * warp.step_px : -1;
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        let [px, py] = [x, y];
        if (warp && x >= warp.x_px && x <= warpX1 && y >= warp.y_px && y <= warpY1) {
          const [dx, dy] = warpAt(warp, x, y);
          px += dx;
          py += dy;
        }
        if (!projection.identity) [px, py] = projection.toPlane(px, py);
        let [u, v] = projectPixel(inverse, px, py, side);
        if (division) {
          [u, v] = distortDivision(division, u, v);
        } else if (lens) {
          const nx = (u - intr.cx) / intr.fx;
          const ny = (v - intr.cy) / intr.fy;
          if (!(nx * nx + ny * ny <= maxR2)) continue;
          [u, v] = distortBrown(intr, lens, u, v);
        }
        if (!(u >= -0.5 && u < maxU && v >= -0.5 && v < maxV)) continue;
        const k = y * width + x;
        xmap[k] = Math.min(cam.width_px - 1, Math.round(u));
        ymap[k] = Math.min(cam.height_px - 1, Math.round(v));
        weight[k] = Math.min(featherPx, u + 0.5, maxU - u, v + 0.5, maxV - v) + 1e-3;
        covered++;
        if (x < x0) x0 = x;
        if (x > x1) x1 = x;
        if (y < y0) y0 = y;
        if (y > y1) y1 = y;
      }
    }
    weights.push(weight);
    // Even corners and sizes where the panorama allows: the 4:2:0 graph warps chroma at half size.
    const box = covered === 0 ? { x: 0, y: 0, width: 2, height: 2 } : evenBox(x0, y0, x1, y1, width, height);
    return { cameraId: cam.id, xmap, ymap, mask: new Uint8Array(n), coveredPixels: covered, box };
  });

  const seamX = venue.panorama.seam_x_px;
  if (seamX && cameras.length === 2) {
    if (seamX.length !== height) {
      throw new ValidationError(
        'stitch_invalid_option',
        `panorama.seam_x_px has ${seamX.length} values: expected one per panorama row (${height})`,
      );
    }
    seamWeights(weights as [Float32Array, Float32Array], width, seamX, venue.panorama.seam_feather_px ?? 32);
  }
  // Fold the normalised weights into sequential blend masks.
  const sum = new Float32Array(n);
  let overlap = 0;
  const seen = new Uint8Array(n);
  cameras.forEach((cam, i) => {
    const w = weights[i] as Float32Array;
    for (let k = 0; k < n; k++) {
      const wk = w[k] as number;
      if (wk <= 0) continue;
      const s = (sum[k] as number) + wk;
      cam.mask[k] = i === 0 ? 255 : Math.round((255 * wk) / s);
      sum[k] = s;
      if (seen[k]) overlap++;
      seen[k] = 1;
    }
  });

  let coveredAny = 0;
  for (let k = 0; k < n; k++) if (seen[k]) coveredAny++;
  const pitchCoverage = pitchCoverageOf(venue, seen);
  for (const cam of cameras) {
    if (cam.coveredPixels === 0) {
      throw new ValidationError(
        'stitch_calibration_uncovered',
        `${cam.cameraId} sees no pixel of the ${width}×${height} panorama: check its image_to_panorama`,
        { details: { camera_id: cam.cameraId } },
      );
    }
  }
  if (pitchCoverage < minPitchCoverage) {
    throw new ValidationError(
      'stitch_calibration_uncovered',
      `the cameras see only ${(100 * pitchCoverage).toFixed(2)} % of the pitch in the panorama (at least ${(100 * minPitchCoverage).toFixed(2)} % expected): the calibration does not cover the panorama`,
      { details: { pitch_coverage: pitchCoverage, min_pitch_coverage: minPitchCoverage } },
    );
  }
  return { widthPx: width, heightPx: height, cameras, coverage: coveredAny / n, pitchCoverage, overlapPixels: overlap };
}

/** The box [x0, x1] × [y0, y1] grown to even corners and sizes, inside a `width × height` panorama where it can be. */
function evenBox(x0: number, y0: number, x1: number, y1: number, width: number, height: number): PixelBox {
  const ex0 = x0 - (x0 % 2);
  const ey0 = y0 - (y0 % 2);
  const ex1 = Math.min(width % 2 === 0 ? width : width - 1, x1 + 1 + ((x1 + 1 - ex0) % 2));
  const ey1 = Math.min(height % 2 === 0 ? height : height - 1, y1 + 1 + ((y1 + 1 - ey0) % 2));
  return { x: ex0, y: ey0, width: Math.max(2, ex1 - ex0), height: Math.max(2, ey1 - ey0) };
}

/**
 * Replaces the feather weights of a two-camera rig by a blend across a seam:
 * where both cameras see, camera 1's share rises linearly from 0 to 1 over
 * `featherPx` centred on `seamX[row]`, towards the side where camera 1's own
 * area lies (the side of its coverage centroid). Where one camera sees alone it keeps all.
 */
function seamWeights(
  weights: [Float32Array, Float32Array],
  width: number,
  seamX: readonly number[],
  featherPx: number,
) {
  const [w0, w1] = weights;
  let s0 = 0;
  let n0 = 0;
  let s1 = 0;
  let n1 = 0;
  for (let k = 0; k < w0.length; k++) {
    const x = k % width;
    if ((w0[k] as number) > 0) {
      s0 += x;
      n0++;
    }
    if ((w1[k] as number) > 0) {
      s1 += x;
      n1++;
    }
  }
  const side = n0 && n1 && s1 / n1 < s0 / n0 ? -1 : 1;
  for (let k = 0; k < w0.length; k++) {
    if (!((w0[k] as number) > 0 && (w1[k] as number) > 0)) continue;
    const x = k % width;
    const seam = seamX[(k - x) / width] as number;
    const t = Math.min(1, Math.max(0, ((x - seam) * side) / featherPx + 0.5));
    w0[k] = 1 - t + 1e-3;
    w1[k] = t + 1e-3;
  }
}

/**
 * Fraction of the panorama pixels showing the pitch (via the venue's pitch mapping, `pitchMappingOf`)
 * that are marked in `seen`; 1 for a venue without a measured pitch frame (a self-calibrated one:
 * its panorama is checked as a whole instead).
 */
function pitchCoverageOf(venue: VenueCalibration, seen: Uint8Array): number {
  const { width_px: width, height_px: height } = venue.panorama;
  const mapping = pitchMappingOf(venue);
  if (!mapping) return 1;
  const { toPitch } = mapping;
  const halfL = venue.pitch.length_m / 2;
  const halfW = venue.pitch.width_m / 2;
  let pitch = 0;
  let covered = 0;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const p = toPitch(x, y);
      if (!p || !(Math.abs(p[0]) <= halfL && Math.abs(p[1]) <= halfW)) continue;
      pitch++;
      if (seen[y * width + x]) covered++;
    }
  }
  return pitch === 0 ? 0 : covered / pitch;
}
