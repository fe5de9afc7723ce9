import { loadOpenCv, type OpenCv } from '@polyvision/shared';
import type { RawFrame } from './frames/index.ts';
import type { BoxXyxy } from './geometry.ts';

/**
 * The camera's motion between two analysed frames as a 2×3 affine matrix `[a, b, tx, c, d, ty]`
 * in source pixels: a point at `(x, y)` in the earlier frame is at `(a·x + b·y + tx, c·x + d·y + ty)`
 * in the later one (a pan moves the picture, so the background's points move; a zoom scales them).
 */
export type CameraMotion = [number, number, number, number, number, number];

/** Options of {@link CameraMotionEstimator}. */
export interface CameraMotionOptions {
  /** Width (px) the frames are reduced to, grey, before tracking features. @defaultValue 640 */
  workingWidthPx?: number;
  /** Corners tracked per frame (Shi–Tomasi, `goodFeaturesToTrack`). @defaultValue 200 */
  maxFeatures?: number;
  /** Fewer RANSAC inliers than this: no estimate for the frame. @defaultValue 20 */
  minInliers?: number;
  /**
   * A motion that moves no corner of the frame by more than this many working pixels is the
   * camera standing still (sub-pixel flow noise of a fixed rig): reported as `null`. @defaultValue 0.25
   */
  stillTolerancePx?: number;
  /**
   * After this many consecutive still frames the camera is taken for a fixed rig and only one frame
   * pair in `sampleEveryFrames` is measured (the others are `skipped`, taken as still) until a
   * measured pair moves again. `Infinity`: measure every frame. @defaultValue 10
   */
  stillFramesToSample?: number;
  /** See `stillFramesToSample`. @defaultValue 25 (2.5 s at 10 analysed frames per second) */
  sampleEveryFrames?: number;
}

/** What {@link CameraMotionEstimator} saw, frames counted from the second one on. */
export interface CameraMotionCounts {
  /** Frames with a motion beyond the still tolerance. */
  moving: number;
  /** Frames whose camera stood still. */
  still: number;
  /** Frames with too few features or inliers to say (a blank or blurred frame, a cut). */
  unknown: number;
  /** Frames not measured, taken as still (a fixed rig, `stillFramesToSample`). */
  skipped: number;
}

/**
 * Global (camera) motion between consecutive analysed frames, for the tracker's camera-motion
 * compensation (BoT-SORT's GMC: Aharon et al., "BoT-SORT: Robust Associations Multi-Pedestrian
 * Tracking", 2022, which uses sparse optical flow with an affine RANSAC fit). Per frame: grey at
 * `workingWidthPx`, Shi–Tomasi corners of the previous frame away from its person boxes (players
 * move on their own), pyramidal Lucas–Kanade flow to this frame, `estimateAffine2D` with RANSAC
 * (1 working px) to find the pairs that agree, then the least-squares similarity (pan, tilt, zoom,
 * roll: BoT-SORT's partial affine; OpenCV.js has no `estimateAffinePartial2D`) on those — OpenCV.js (`@techstark/opencv-js`). A fixed rig costs little: once the camera has
 * stood still for `stillFramesToSample` frames, one pair in `sampleEveryFrames` is measured. Holds
 * one grey frame; {@link close} frees it. Cost: bench/README § camera motion.
 */
export class CameraMotionEstimator {
  readonly #cv: OpenCv;
  readonly #o: Required<CameraMotionOptions>;
  #previous: { grey: OpenCv; scale: number; people: readonly BoxXyxy[] } | null = null;
  #calls = 0;
  #workingWidthPx: number;
  #stillRun = 0;
  readonly counts: CameraMotionCounts = { moving: 0, still: 0, unknown: 0, skipped: 0 };

  private constructor(cv: OpenCv, options: CameraMotionOptions) {
    this.#cv = cv;
    this.#workingWidthPx = options.workingWidthPx ?? 640;
    this.#o = {
      workingWidthPx: options.workingWidthPx ?? 640,
      maxFeatures: options.maxFeatures ?? 400,
      minInliers: options.minInliers ?? 20,
      stillTolerancePx: options.stillTolerancePx ?? 0.25,
      stillFramesToSample: options.stillFramesToSample ?? 10,
      sampleEveryFrames: options.sampleEveryFrames ?? 25,
    };
  }

  /** Loads OpenCV.js (once per process) and returns an estimator. */
  static async create(options: CameraMotionOptions = {}): Promise<CameraMotionEstimator> {
    const { cv } = await loadOpenCv();
    return new CameraMotionEstimator(cv, options);
  }

  /**
   * The camera's motion from the frame given to the previous call to this one, or `null` for the
   * first frame, a still camera or a frame it cannot say (see {@link counts}).
   *
   * @param frame - a decoded frame, `bgr24` (or `rgb24`) at any size.
   * @param sourceWidthPx - the source's width: `frame` may be decoded smaller; the motion is in source px.
   * @param people - this frame's person boxes, source px: no features are taken on them next time.
   */
  next(frame: RawFrame, sourceWidthPx: number, people: readonly BoxXyxy[]): CameraMotion | null {
    this.#calls += 1;
    const o = this.#o;
    if (this.#stillRun >= o.stillFramesToSample) {
      // A fixed rig: only the pair (k·S − 1, k·S) is measured.
      const phase = this.#calls % o.sampleEveryFrames;
      if (phase !== 0) {
        this.close();
        this.counts.skipped += 1;
        if (phase === o.sampleEveryFrames - 1) this.#previous = this.#hold(frame, sourceWidthPx, people);
        return null;
      }
    }
    const previous = this.#previous;
    this.#previous = this.#hold(frame, sourceWidthPx, people);
    const { grey, scale } = this.#previous;
    if (!previous) return null;
    try {
      const motion = previous.scale === scale ? this.#estimate(previous, grey) : null;
      if (!motion) {
        this.counts.unknown += 1;
        this.#stillRun = 0;
        return null;
      }
      const corners: [number, number][] = [
        [0, 0],
        [grey.cols, 0],
        [0, grey.rows],
        [grey.cols, grey.rows],
      ];
      const shift = Math.max(
        ...corners.map(([x, y]) => {
          const [mx, my] = applyCameraMotion(motion, x, y);
          return Math.hypot(mx - x, my - y);
        }),
      );
      if (shift <= o.stillTolerancePx) {
        this.counts.still += 1;
        this.#stillRun += 1;
        return null;
      }
      this.counts.moving += 1;
      this.#stillRun = 0;
      // Working px → source px: the linear part is the same, the translation divides by the scale.
      const [a, b, tx, c, d, ty] = motion;
      return [a, b, tx / scale, c, d, ty / scale];
    } finally {
      previous.grey.delete();
    }
  }

  /** The width (px) frames are measured at: `workingWidthPx`, or the frames' own when narrower. */
  get workingWidthPx(): number {
    return this.#workingWidthPx;
  }

  #hold(frame: RawFrame, sourceWidthPx: number, people: readonly BoxXyxy[]) {
    const grey = this.#grey(frame);
    this.#workingWidthPx = grey.cols;
    return { grey, scale: grey.cols / sourceWidthPx, people }; // scale: working px per source px
  }

  /** Frees the frame held. */
  close(): void {
    this.#previous?.grey.delete();
    this.#previous = null;
  }

  #grey(frame: RawFrame): OpenCv {
    const cv = this.#cv;
    const colour = new cv.Mat(frame.height, frame.width, cv.CV_8UC3);
    const grey = new cv.Mat();
    try {
      colour.data.set(frame.data.subarray(0, frame.width * frame.height * 3));
      cv.cvtColor(colour, grey, cv.COLOR_BGR2GRAY);
      const width = Math.min(this.#o.workingWidthPx, frame.width);
      if (width === frame.width) return grey;
      const small = new cv.Mat();
      const height = Math.max(1, Math.round((frame.height * width) / frame.width));
      cv.resize(grey, small, new cv.Size(width, height), 0, 0, cv.INTER_AREA);
      grey.delete();
      return small;
    } catch (error) {
      grey.delete();
      throw error;
    } finally {
      colour.delete();
    }
  }

  /** The affine fit in working px from `previous.grey` to `grey`, or null when too little agrees. */
  #estimate(previous: { grey: OpenCv; scale: number; people: readonly BoxXyxy[] }, grey: OpenCv): CameraMotion | null {
    const cv = this.#cv;
    const o = this.#o;
    const mats: OpenCv[] = [];
    const mat = (m: OpenCv) => {
      mats.push(m);
      return m;
    };
    try {
      const mask = mat(new cv.Mat(grey.rows, grey.cols, cv.CV_8UC1, new cv.Scalar(255)));
      for (const box of previous.people) {
        // The person box grown by a tenth each side (limbs, shadow), in working px.
        const gx = (box[2] - box[0]) * 0.1;
        const gy = (box[3] - box[1]) * 0.1;
        const x1 = Math.max(0, Math.floor((box[0] - gx) * previous.scale));
        const y1 = Math.max(0, Math.floor((box[1] - gy) * previous.scale));
        const x2 = Math.min(grey.cols, Math.ceil((box[2] + gx) * previous.scale));
        const y2 = Math.min(grey.rows, Math.ceil((box[3] + gy) * previous.scale));
        if (x2 > x1 && y2 > y1)
          cv.rectangle(mask, new cv.Point(x1, y1), new cv.Point(x2 - 1, y2 - 1), new cv.Scalar(0), -1);
      }
      const from = mat(new cv.Mat());
      const minDistance = Math.max(4, Math.round(grey.cols / 80));
      cv.goodFeaturesToTrack(previous.grey, from, o.maxFeatures, 0.01, minDistance, mask, 3);
      if (from.rows < o.minInliers) return null;
      const to = mat(new cv.Mat());
      const status = mat(new cv.Mat());
      const error = mat(new cv.Mat());
      const criteria = new cv.TermCriteria(cv.TermCriteria_COUNT | cv.TermCriteria_EPS, 30, 0.01);
      cv.calcOpticalFlowPyrLK(previous.grey, grey, from, to, status, error, new cv.Size(15, 15), 3, criteria);
      const source: number[] = [];
      const target: number[] = [];
      for (let i = 0; i < from.rows; i++) {
        if (status.data[i] !== 1) continue;
        source.push(from.data32F[2 * i], from.data32F[2 * i + 1]);
        target.push(to.data32F[2 * i], to.data32F[2 * i + 1]);
      }
      const pairs = source.length / 2;
      if (pairs < o.minInliers) return null;
      const sourceMat = mat(cv.matFromArray(pairs, 1, cv.CV_32FC2, source));
      const targetMat = mat(cv.matFromArray(pairs, 1, cv.CV_32FC2, target));
      const inliers = mat(new cv.Mat());
      const fit = mat(cv.estimateAffine2D(sourceMat, targetMat, inliers, cv.RANSAC, 1, 2000, 0.995, 10));
      if (fit.empty() || fit.rows !== 2) return null;
      const kept: number[] = [];
      for (let i = 0; i < pairs; i++) if (inliers.data[i]) kept.push(i);
      if (kept.length < o.minInliers) return null;
      return similarityFit(kept.map((i) => [source[2 * i]!, source[2 * i + 1]!, target[2 * i]!, target[2 * i + 1]!]));
    } finally {
      for (const m of mats) m.delete();
    }
  }
}

/**
 * The least-squares similarity `x' = s·R·x + t` (4 degrees of freedom) taking each pair's first
 * point to its second: the closed form of Umeyama (IEEE TPAMI 13(4), 1991) for 2-D without reflection,
 * as a {@link CameraMotion}.
 *
 * @param pairs - `[x, y, x', y']`, at least two distinct points.
 */
export function similarityFit(pairs: readonly (readonly [number, number, number, number])[]): CameraMotion {
  const n = pairs.length;
  let mx = 0;
  let my = 0;
  let nx = 0;
  let ny = 0;
  for (const [x, y, u, v] of pairs) {
    mx += x / n;
    my += y / n;
    nx += u / n;
    ny += v / n;
  }
  let dot = 0;
  let cross = 0;
  let norm = 0;
  for (const [x, y, u, v] of pairs) {
    const px = x - mx;
    const py = y - my;
    const qx = u - nx;
    const qy = v - ny;
    dot += px * qx + py * qy;
    cross += px * qy - py * qx;
    norm += px * px + py * py;
  }
  const a = norm > 0 ? dot / norm : 1; // s·cos θ
  const b = norm > 0 ? cross / norm : 0; // s·sin θ
  return [a, -b, nx - (a * mx - b * my), b, a, ny - (b * mx + a * my)];
}

/** Applies a {@link CameraMotion} to a point. */
export function applyCameraMotion(motion: CameraMotion, x: number, y: number): [number, number] {
  const [a, b, tx, c, d, ty] = motion;
  return [a * x + b * y + tx, c * x + d * y + ty];
}

/** The motion that undoes `motion` (its inverse affine map). @throws RangeError for a singular one. */
export function invertCameraMotion(motion: CameraMotion): CameraMotion {
  const [a, b, tx, c, d, ty] = motion;
  const det = a * d - b * c;
  if (Math.abs(det) < 1e-12) throw new RangeError('camera motion is singular');
  const [ia, ib, ic, id] = [d / det, -b / det, -c / det, a / det];
  return [ia, ib, -(ia * tx + ib * ty), ic, id, -(ic * tx + id * ty)];
}

/** `second ∘ first`: the motion `first`, then `second`. */
export function composeCameraMotions(first: CameraMotion, second: CameraMotion): CameraMotion {
  const [a1, b1, tx1, c1, d1, ty1] = first;
  const [a2, b2, tx2, c2, d2, ty2] = second;
  return [
    a2 * a1 + b2 * c1,
    a2 * b1 + b2 * d1,
    a2 * tx1 + b2 * ty1 + tx2,
    c2 * a1 + d2 * c1,
    c2 * b1 + d2 * d1,
    c2 * tx1 + d2 * ty1 + ty2,
  ];
}

/** How much a motion scales lengths (a zoom): √|det| of its linear part. */
export function cameraMotionScale(motion: CameraMotion): number {
  return Math.sqrt(Math.abs(motion[0] * motion[4] - motion[1] * motion[3]));
}

/** A box `[x1, y1, x2, y2]` moved with the camera: its centre mapped, its size scaled by {@link cameraMotionScale}. */
export function moveBox(motion: CameraMotion, box: Readonly<BoxXyxy>): BoxXyxy {
  const scale = cameraMotionScale(motion);
  const [cx, cy] = applyCameraMotion(motion, (box[0] + box[2]) / 2, (box[1] + box[3]) / 2);
  const hw = ((box[2] - box[0]) * scale) / 2;
  const hh = ((box[3] - box[1]) * scale) / 2;
  return [cx - hw, cy - hh, cx + hw, cy + hh];
}

/**
 * Per analysed frame (its `frame` number), the motion taking its pixels to the first frame's — the
 * clip's pixels in one frame of reference, where a pan no longer moves what stands still — from the
 * frames' camera motions (absent: still). `null` when the camera never moved.
 */
export function motionsToFirstFrame(
  frames: readonly { frame: number; cameraMotion?: CameraMotion | undefined }[],
): Map<number, CameraMotion> | null {
  if (!frames.some((f) => f.cameraMotion)) return null;
  const out = new Map<number, CameraMotion>();
  let toFirst: CameraMotion = [1, 0, 0, 0, 1, 0];
  for (const f of frames) {
    // Frame k → frame k−1 is the inverse of the motion k−1 → k; then on to the first frame.
    if (f.cameraMotion) toFirst = composeCameraMotions(invertCameraMotion(f.cameraMotion), toFirst);
    out.set(f.frame, toFirst);
  }
  return out;
}
