/**
 * Seam alignment of a two-camera rig, at calibration time: one homography fits the
 * far side of the pitch, but cameras that are not at one point see the near pitch
 * with parallax, so the near touchline steps at the seam. Here, in the panorama's
 * overlap of the two background frames (players removed by the median):
 *
 * 1. both cameras are rendered into the overlap (reduced resolution, bilinear);
 * 2. dense optical flow from camera A's rendering to camera B's (OpenCV.js
 *    Farnebäck, "Two-frame motion estimation based on polynomial expansion",
 *    SCIA 2003) gives the residual parallax `f` with `A(p) ≈ B(p + f(p))`; it is
 *    smoothed by normalised convolution (weights: where both cameras see);
 * 3. camera B is warped by `α(p)·f(p)`: α = 1 up to the seam and falls to 0 at
 *    the edge of the overlap on B's side, so B stays continuous with its own area;
 * 4. the seam is the least-difference path through the aligned overlap
 *    (dynamic programming, one column per row, moving at most one column per
 *    row; Efros & Freeman, "Image Quilting", SIGGRAPH 2001), kept to the middle
 *    half of the overlap so the warp has room to fade out.
 *
 * The result goes into the venue file (`panorama_warp` of camera B,
 * `panorama.seam_x_px`) and the stitcher bakes it into its remap maps.
 */
import type { PanoramaProjection, VenueCamera } from '@polyvision/shared';
import { loadOpenCv } from '@polyvision/shared';
import { type DivisionLens, distortDivision } from './lens-distortion.ts';
import { apply3, inv3 } from './panorama-plane.ts';

/** One camera as the seam alignment sees it. */
export interface SeamCamera {
  /** Background frame (grey, recorded = distorted pixels), `widthPx × heightPx`. */
  gray: Uint8Array;
  widthPx: number;
  heightPx: number;
  lens: DivisionLens;
  /** Undistorted camera pixels → panorama pixels (the panorama's plane when `projection` is given), row-major 3×3. */
  imageToPano: readonly number[];
  /** The panorama's projection (shared `panoramaProjectionOf`). @defaultValue the identity (planar) */
  projection?: PanoramaProjection;
}

/** Options of {@link alignSeam}. */
export interface SeamAlignmentOptions {
  /** Largest displacement kept, panorama pixels (larger flow is clamped). @defaultValue 96 */
  maxShiftPx?: number;
  /** Height of the working rendering, pixels (the panorama is scaled down to about this). @defaultValue 820 */
  workHeightPx?: number;
  /** Node spacing of the stored warp grid, panorama pixels. @defaultValue 16 */
  gridStepPx?: number;
  /** Blend width across the seam, panorama pixels. @defaultValue 32 */
  featherPx?: number;
}

/** What {@link alignSeam} found. */
export interface SeamAlignment {
  /** Camera B's warp (the `panorama_warp` of the venue's second camera). */
  warp: NonNullable<VenueCamera['panorama_warp']>;
  /** One seam column per panorama row. */
  seamXPx: number[];
  featherPx: number;
  /** Mean |A − B| over the overlap (grey levels) before and after the warp: the alignment's own check. */
  meanDifference: { before: number; after: number };
  /** Median and largest displacement applied, panorama pixels. */
  shiftPx: { median: number; max: number };
}

/** Bilinear sample of a grey image; NaN outside. */
function sample(img: Uint8Array, w: number, h: number, u: number, v: number): number {
  if (!(u >= 0 && v >= 0 && u <= w - 1 && v <= h - 1)) return Number.NaN;
  const x0 = Math.min(w - 2, Math.floor(u));
  const y0 = Math.min(h - 2, Math.floor(v));
  const fx = u - x0;
  const fy = v - y0;
  const i = y0 * w + x0;
  const a = img[i] as number;
  const b = img[i + 1] as number;
  const c = img[i + w] as number;
  const d = img[i + w + 1] as number;
  return (a * (1 - fx) + b * fx) * (1 - fy) + (c * (1 - fx) + d * fx) * fy;
}

/** The grey value camera `cam` shows at panorama pixel (x, y), NaN where it does not see it. */
function panoSample(cam: SeamCamera, inverse: readonly number[], x: number, y: number): number {
  const [u, v] = apply3(inverse as number[], ...(cam.projection ? cam.projection.toPlane(x, y) : ([x, y] as const)));
  if (!Number.isFinite(u)) return Number.NaN;
  const [du, dv] = distortDivision(cam.lens, u, v);
  return sample(cam.gray, cam.widthPx, cam.heightPx, du, dv);
}

/** Separable box blur (radius r) of a float image, ignoring nothing (used on weights and weighted values). */
function boxBlur(src: Float32Array, w: number, h: number, r: number): Float32Array {
  const tmp = new Float32Array(w * h);
  const out = new Float32Array(w * h);
  for (let y = 0; y < h; y++) {
    let acc = 0;
    for (let x = -r; x <= r; x++) acc += x >= 0 && x < w ? (src[y * w + x] as number) : 0;
    for (let x = 0; x < w; x++) {
      tmp[y * w + x] = acc;
      const add = x + r + 1;
      const sub = x - r;
      if (add < w) acc += src[y * w + add] as number;
      if (sub >= 0) acc -= src[y * w + sub] as number;
    }
  }
  for (let x = 0; x < w; x++) {
    let acc = 0;
    for (let y = -r; y <= r; y++) acc += y >= 0 && y < h ? (tmp[y * w + x] as number) : 0;
    for (let y = 0; y < h; y++) {
      out[y * w + x] = acc;
      const add = y + r + 1;
      const sub = y - r;
      if (add < h) acc += tmp[add * w + x] as number;
      if (sub >= 0) acc -= tmp[sub * w + x] as number;
    }
  }
  return out;
}

/**
 * Measures the residual parallax between two cameras in their panorama overlap
 * and returns camera B's warp and the seam (see the file's comment).
 *
 * @param a - camera 0 of the venue; @param b - camera 1.
 * @param panorama - the panorama's size, pixels.
 * @returns null when the cameras share fewer than 8 working rows (nothing to align).
 */
export async function alignSeam(
  a: SeamCamera,
  b: SeamCamera,
  panorama: { widthPx: number; heightPx: number },
  options: SeamAlignmentOptions = {},
): Promise<SeamAlignment | null> {
  const maxShiftPx = options.maxShiftPx ?? 96;
  const gridStepPx = options.gridStepPx ?? 16;
  const featherPx = options.featherPx ?? 32;
  const k = Math.max(1, panorama.heightPx / (options.workHeightPx ?? 820));
  const invA = inv3(a.imageToPano);
  const invB = inv3(b.imageToPano);

  // Overlap columns (work grid), from a coarse scan.
  const wh = Math.ceil(panorama.heightPx / k);
  const ww = Math.ceil(panorama.widthPx / k);
  let c0 = ww;
  let c1 = -1;
  let sumXA = 0;
  let sumXB = 0;
  let nA = 0;
  let nB = 0;
  for (let y = 0; y < wh; y += 4) {
    for (let x = 0; x < ww; x += 2) {
      const sa = panoSample(a, invA, x * k, y * k);
      const sb = panoSample(b, invB, x * k, y * k);
      if (!Number.isNaN(sa)) {
        sumXA += x;
        nA++;
      }
      if (!Number.isNaN(sb)) {
        sumXB += x;
        nB++;
      }
      if (!Number.isNaN(sa) && !Number.isNaN(sb)) {
        c0 = Math.min(c0, x);
        c1 = Math.max(c1, x);
      }
    }
  }
  if (c1 < c0 + 8 || nA === 0 || nB === 0) return null;
  // Which side B's own area lies on: +1 right of A, −1 left.
  const bSide = sumXB / nB >= sumXA / nA ? 1 : -1;
  const margin = 24;
  const ox = Math.max(0, c0 - margin);
  const ow = Math.min(ww, c1 + margin + 1) - ox;
  const n = ow * wh;
  const imgA = new Uint8Array(n);
  const imgB = new Uint8Array(n);
  const valid = new Float32Array(n);
  for (let y = 0; y < wh; y++) {
    for (let x = 0; x < ow; x++) {
      const px = (ox + x) * k;
      const py = y * k;
      const sa = panoSample(a, invA, px, py);
      const sb = panoSample(b, invB, px, py);
      const i = y * ow + x;
      // Where one camera does not see, it gets the other's pixel: the flow there is zero instead of
      // chasing the black border (which the coarse pyramid levels would spread far into the overlap).
      imgA[i] = Math.round(Number.isNaN(sa) ? (Number.isNaN(sb) ? 0 : sb) : sa);
      imgB[i] = Math.round(Number.isNaN(sb) ? (Number.isNaN(sa) ? 0 : sa) : sb);
      valid[i] = Number.isNaN(sa) || Number.isNaN(sb) ? 0 : 1;
    }
  }

  // Dense flow A → B: A(p) ≈ B(p + f(p)).
  const { cv } = await loadOpenCv();
  const matA = cv.matFromArray(wh, ow, cv.CV_8UC1, imgA);
  const matB = cv.matFromArray(wh, ow, cv.CV_8UC1, imgB);
  const flow = new cv.Mat();
  let fx: Float32Array;
  let fy: Float32Array;
  try {
    cv.calcOpticalFlowFarneback(matA, matB, flow, 0.5, 5, 25, 5, 7, 1.5, cv.OPTFLOW_FARNEBACK_GAUSSIAN);
    const data = flow.data32F as Float32Array;
    fx = new Float32Array(n);
    fy = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      fx[i] = data[2 * i] as number;
      fy[i] = data[2 * i + 1] as number;
    }
  } finally {
    matA.delete();
    matB.delete();
    flow.delete();
  }

  // Confidence: where both see, away from the overlap's borders (flow there sees black); smoothed.
  const inner = boxBlur(valid, ow, wh, 6);
  const conf = new Float32Array(n);
  const full = 13 * 13;
  for (let i = 0; i < n; i++) conf[i] = (inner[i] as number) >= full - 0.5 ? 1 : 0;
  const maxShiftWork = maxShiftPx / k;
  const wfx = new Float32Array(n);
  const wfy = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const c = conf[i] as number;
    const m = Math.hypot(fx[i] as number, fy[i] as number);
    const scale = m > maxShiftWork ? maxShiftWork / m : 1;
    wfx[i] = c * (fx[i] as number) * scale;
    wfy[i] = c * (fy[i] as number) * scale;
  }
  const radius = 12;
  const sw = boxBlur(conf, ow, wh, radius);
  const sx = boxBlur(wfx, ow, wh, radius);
  const sy = boxBlur(wfy, ow, wh, radius);
  const cap = (2 * radius + 1) ** 2;
  for (let i = 0; i < n; i++) {
    const w = sw[i] as number;
    // Normalised convolution, faded where little of the window is trusted.
    const fade = Math.min(1, w / (0.3 * cap));
    fx[i] = w > 1e-3 ? ((sx[i] as number) / w) * fade : 0;
    fy[i] = w > 1e-3 ? ((sy[i] as number) / w) * fade : 0;
  }

  // Per row: the overlap span [l, r] (work columns); the seam is searched in its middle half.
  const rowL = new Int32Array(wh).fill(-1);
  const rowR = new Int32Array(wh).fill(-1);
  for (let y = 0; y < wh; y++) {
    for (let x = 0; x < ow; x++) {
      if (!valid[y * ow + x]) continue;
      if (rowL[y] === -1) rowL[y] = x;
      rowR[y] = x;
    }
  }
  // Difference after aligning B fully (α = 1), blurred: the seam cost.
  const diff = new Float32Array(n);
  let before = 0;
  let after = 0;
  let counted = 0;
  for (let y = 0; y < wh; y++) {
    for (let x = 0; x < ow; x++) {
      const i = y * ow + x;
      if (!conf[i]) {
        diff[i] = 0;
        continue;
      }
      const px = (ox + x) * k;
      const py = y * k;
      const sb = panoSample(b, invB, px + (fx[i] as number) * k, py + (fy[i] as number) * k);
      const d = Number.isNaN(sb) ? 64 : Math.abs((imgA[i] as number) - sb);
      diff[i] = d;
      before += Math.abs((imgA[i] as number) - (imgB[i] as number));
      after += d;
      counted++;
    }
  }
  const cost = boxBlur(diff, ow, wh, 2);
  const big = 1e9;
  const seamWork = new Float64Array(wh);
  const acc = new Float64Array(n);
  const from = new Int8Array(n);
  const allowed = (y: number, x: number) => {
    const l = rowL[y] as number;
    const r = rowR[y] as number;
    if (l < 0 || r - l < 16) return true; // no real overlap in this row: free
    return x >= l + 0.25 * (r - l) && x <= l + 0.75 * (r - l);
  };
  for (let y = 0; y < wh; y++) {
    for (let x = 0; x < ow; x++) {
      const i = y * ow + x;
      const own = allowed(y, x) ? (cost[i] as number) : big;
      if (y === 0) {
        acc[i] = own;
        continue;
      }
      let best = Number.POSITIVE_INFINITY;
      let arg = 0;
      for (let d = -1; d <= 1; d++) {
        const xp = x + d;
        if (xp < 0 || xp >= ow) continue;
        const v = acc[(y - 1) * ow + xp] as number;
        if (v < best) {
          best = v;
          arg = d;
        }
      }
      acc[i] = best + own; // a path through disallowed cells costs `big` per cell, never saturates
      from[i] = arg;
    }
  }
  let xEnd = 0;
  for (let x = 1; x < ow; x++) if ((acc[(wh - 1) * ow + x] as number) < (acc[(wh - 1) * ow + xEnd] as number)) xEnd = x;
  for (let y = wh - 1; y >= 0; y--) {
    seamWork[y] = xEnd;
    xEnd += from[y * ow + xEnd] as number;
  }

  // α: 1 on A's side of the seam, falling linearly to 0 at the overlap's edge on B's side.
  for (let y = 0; y < wh; y++) {
    const s = seamWork[y] as number;
    const edge = bSide > 0 ? (rowR[y] as number) : (rowL[y] as number);
    for (let x = 0; x < ow; x++) {
      const i = y * ow + x;
      let alpha = 1;
      if (rowL[y] === -1) alpha = 0;
      else if ((x - s) * bSide > 0) alpha = Math.max(0, 1 - (x - s) / (edge - s || 1));
      fx[i] = (fx[i] as number) * alpha;
      fy[i] = (fy[i] as number) * alpha;
    }
  }

  // Resample onto the stored grid (panorama pixels), with a zero border so the warp ends smoothly.
  const gx0 = Math.max(0, Math.floor((ox * k) / gridStepPx) * gridStepPx - gridStepPx);
  const gx1 = Math.min(panorama.widthPx - 1 + gridStepPx, (ox + ow) * k + gridStepPx);
  const cols = Math.max(2, Math.ceil((gx1 - gx0) / gridStepPx) + 1);
  const rows = Math.max(2, Math.ceil((panorama.heightPx - 1) / gridStepPx) + 1);
  const dx: number[] = [];
  const dy: number[] = [];
  const shifts: number[] = [];
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const X = Math.round((gx0 + c * gridStepPx) / k) - ox;
      const Y = Math.min(wh - 1, Math.round((r * gridStepPx) / k));
      const inside = X >= 0 && X < ow;
      const i = Y * ow + X;
      const vx = inside ? (fx[i] as number) * k : 0;
      const vy = inside ? (fy[i] as number) * k : 0;
      dx.push(Math.round(vx * 100) / 100);
      dy.push(Math.round(vy * 100) / 100);
      if (inside && (vx !== 0 || vy !== 0)) shifts.push(Math.hypot(vx, vy));
    }
  }
  shifts.sort((p, q) => p - q);
  const seamXPx: number[] = [];
  for (let y = 0; y < panorama.heightPx; y++) {
    const t = y / k;
    const y0 = Math.min(wh - 1, Math.floor(t));
    const y1 = Math.min(wh - 1, y0 + 1);
    const f = t - y0;
    const s = (seamWork[y0] as number) * (1 - f) + (seamWork[y1] as number) * f;
    seamXPx.push(Math.round((ox + s) * k * 10) / 10);
  }
  return {
    warp: { x_px: gx0, y_px: 0, step_px: gridStepPx, cols, rows, dx_px: dx, dy_px: dy },
    seamXPx,
    featherPx,
    meanDifference: { before: counted ? before / counted : 0, after: counted ? after / counted : 0 },
    shiftPx: { median: shifts[shifts.length >> 1] ?? 0, max: shifts[shifts.length - 1] ?? 0 },
  };
}

/**
 * The displacement a camera's `panorama_warp` adds at panorama pixel (x, y),
 * bilinear between grid nodes, zero outside the grid.
 */
export function warpAt(warp: NonNullable<VenueCamera['panorama_warp']>, x: number, y: number): [number, number] {
  const gx = (x - warp.x_px) / warp.step_px;
  const gy = (y - warp.y_px) / warp.step_px;
  if (!(gx >= 0 && gy >= 0 && gx <= warp.cols - 1 && gy <= warp.rows - 1)) return [0, 0];
  const c0 = Math.min(warp.cols - 2, Math.floor(gx));
  const r0 = Math.min(warp.rows - 2, Math.floor(gy));
  const fx = gx - c0;
  const fy = gy - r0;
  const i = r0 * warp.cols + c0;
  const lerp = (v: number[]) =>
    ((v[i] as number) * (1 - fx) + (v[i + 1] as number) * fx) * (1 - fy) +
    ((v[i + warp.cols] as number) * (1 - fx) + (v[i + warp.cols + 1] as number) * fx) * fy;
  return [lerp(warp.dx_px), lerp(warp.dy_px)];
}
