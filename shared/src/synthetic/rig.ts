/**
 * The camera rig: 2–4 fixed cameras mounted together on one side of the
 * stadium (like a panoramic gantry rig), all with the same optical centre and
 * different pan angles, whose overlapping views together cover the pitch; and
 * the virtual panorama camera, a planar pinhole camera at the same centre
 * that sees the whole pitch.
 *
 * Because all the cameras share one centre, each camera image relates to the
 * panorama by a rotation-only homography `Hp · Hi⁻¹` (exact for every scene
 * point, on the ground or not); it is also what an ffmpeg `remap` based
 * stitcher can reproduce exactly.
 */
import { cameraLookingAt, type PinholeCamera, projectPoint } from './camera.ts';
import { mat3MulVec, mat3Transpose, type Vec3 } from './mat3.ts';
import { HALF_LENGTH_M, HALF_WIDTH_M } from './pitch.ts';

export interface RigOptions {
  cameraCount: number;
  widthPx: number;
  heightPx: number;
  /** Rig height above the pitch, metres. */
  heightM: number;
  /** Horizontal distance from the near touchline to the rig, metres. */
  setbackM: number;
  /** Width of the panorama image, pixels (its height follows from the view). */
  panoramaWidthPx: number;
}

export interface Rig {
  /** Rig centre (shared optical centre) in pitch metres. */
  centreM: Vec3;
  cameras: PinholeCamera[];
  panorama: PinholeCamera;
}

/** Margin around the pitch that the views must include, metres. */
const COVER_MARGIN_M = 2;
/** Extra pitch length each camera sees beyond its share, as a fraction of the share, per side. */
const OVERLAP_FRACTION = 0.12;

/** Normalised image coordinates (x/z, y/z) of world points seen from a rotation at `eye`. */
function normalisedBounds(camera: PinholeCamera, points: Vec3[]) {
  let xMin = Number.POSITIVE_INFINITY;
  let xMax = Number.NEGATIVE_INFINITY;
  let yMin = Number.POSITIVE_INFINITY;
  let yMax = Number.NEGATIVE_INFINITY;
  for (const p of points) {
    const q = projectPoint({ ...camera, fx: 1, fy: 1, cx: 0, cy: 0 }, p);
    xMin = Math.min(xMin, q.u);
    xMax = Math.max(xMax, q.u);
    yMin = Math.min(yMin, q.v);
    yMax = Math.max(yMax, q.v);
  }
  return { xMin, xMax, yMin, yMax };
}

/** Ground-quad corners plus head-height points, so that standing players stay in view. */
function regionPoints(x0: number, x1: number): Vec3[] {
  const y0 = -HALF_WIDTH_M - COVER_MARGIN_M;
  const y1 = HALF_WIDTH_M + COVER_MARGIN_M;
  const pts: Vec3[] = [];
  for (const x of [x0, x1]) for (const y of [y0, y1]) for (const z of [0, 2]) pts.push([x, y, z]);
  return pts;
}

/** Points a camera at `eye` so the region is centred, then picks the focal that fits it. */
function fitCamera(eye: Vec3, points: Vec3[], widthPx: number, heightPx: number): PinholeCamera {
  const centroid = points.reduce<[number, number, number]>(
    (a, p) => [a[0] + p[0] / points.length, a[1] + p[1] / points.length, a[2] + p[2] / points.length],
    [0, 0, 0],
  );
  let camera = cameraLookingAt(eye, centroid, { widthPx, heightPx, focalPx: 1 });
  for (let i = 0; i < 8; i++) {
    const b = normalisedBounds(camera, points);
    const dirCam: Vec3 = [(b.xMin + b.xMax) / 2, (b.yMin + b.yMax) / 2, 1];
    const dir = mat3MulVec(mat3Transpose(camera.rotation), dirCam);
    camera = cameraLookingAt(eye, [eye[0] + dir[0], eye[1] + dir[1], eye[2] + dir[2]], {
      widthPx,
      heightPx,
      focalPx: 1,
    });
  }
  const b = normalisedBounds(camera, points);
  const halfX = Math.max(-b.xMin, b.xMax);
  const halfY = Math.max(-b.yMin, b.yMax);
  const focalPx = Math.min((widthPx - 1) / 2 / halfX, (heightPx - 1) / 2 / halfY);
  return { ...camera, fx: focalPx, fy: focalPx };
}

/**
 * Builds the rig: camera i covers the i-th equal share of the pitch length
 * (plus {@link OVERLAP_FRACTION} of a share on each side, plus a 2 m margin
 * around the pitch, up to head height) and the panorama camera covers the
 * whole pitch at `panoramaWidthPx`, its height rounded up to an even number.
 */
export function buildRig(options: RigOptions): Rig {
  const eye: Vec3 = [0, -HALF_WIDTH_M - options.setbackM, options.heightM];
  const x0 = -HALF_LENGTH_M - COVER_MARGIN_M;
  const share = (2 * HALF_LENGTH_M + 2 * COVER_MARGIN_M) / options.cameraCount;
  const cameras: PinholeCamera[] = [];
  for (let i = 0; i < options.cameraCount; i++) {
    const a = x0 + i * share - OVERLAP_FRACTION * share;
    const b = x0 + (i + 1) * share + OVERLAP_FRACTION * share;
    cameras.push(fitCamera(eye, regionPoints(a, b), options.widthPx, options.heightPx));
  }
  // Panorama: look at the middle of the pitch, fit the focal to the width and place the
  // principal point so that the whole region is inside the image.
  const all = regionPoints(x0, -x0);
  const base = fitCamera(eye, all, 1000, 1000);
  const b = normalisedBounds(base, all);
  const focalPx = (options.panoramaWidthPx - 1) / (b.xMax - b.xMin);
  let heightPx = Math.ceil((b.yMax - b.yMin) * focalPx) + 1;
  if (heightPx % 2 === 1) heightPx += 1;
  const panorama: PinholeCamera = {
    ...base,
    widthPx: options.panoramaWidthPx,
    heightPx,
    fx: focalPx,
    fy: focalPx,
    cx: -b.xMin * focalPx,
    cy: -b.yMin * focalPx + (heightPx - 1 - (b.yMax - b.yMin) * focalPx) / 2,
  };
  return { centreM: eye, cameras, panorama };
}
