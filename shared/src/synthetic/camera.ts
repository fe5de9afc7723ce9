/**
 * The pinhole camera model of the synthetic venue (no lens distortion).
 *
 * World frame (pitch frame): origin at the centre spot, x along the pitch
 * length towards the right goal as seen from the camera side, y across the
 * pitch away from the cameras, z up; metres. Camera frame: OpenCV convention,
 * x right, y down, z forward (optical axis). A world point X maps to the
 * camera frame as `Xc = R·X + t` and to pixels as `[u, v, 1] ~ K·Xc` with
 * `K = [[fx, 0, cx], [0, fy, cy], [0, 0, 1]]` (Hartley & Zisserman, Multiple
 * View Geometry, §6.1). Pixel (0, 0) is the centre of the top-left pixel.
 */
import {
  type Mat3,
  mat3Invert,
  mat3Multiply,
  mat3MulVec,
  mat3Transpose,
  normalizeHomography,
  type Vec3,
  vecCross,
  vecNormalize,
  vecSub,
} from './mat3.ts';

export interface PinholeCamera {
  /** Image size in pixels. */
  widthPx: number;
  heightPx: number;
  /** Focal lengths in pixels. */
  fx: number;
  fy: number;
  /** Principal point in pixels. */
  cx: number;
  cy: number;
  /** World-to-camera rotation, row-major. */
  rotation: Mat3;
  /** World-to-camera translation in metres (`Xc = R·X + t`). */
  translationM: Vec3;
}

/** A projected point: pixel coordinates and the depth along the optical axis (metres). */
export interface Projection {
  u: number;
  v: number;
  depthM: number;
}

/** The intrinsic matrix K, row-major. */
export function intrinsicMatrix(camera: PinholeCamera): number[] {
  return [camera.fx, 0, camera.cx, 0, camera.fy, camera.cy, 0, 0, 1];
}

/** The camera centre in world coordinates, `C = −Rᵀ·t` (metres). */
export function cameraCentre(camera: PinholeCamera): [number, number, number] {
  const c = mat3MulVec(mat3Transpose(camera.rotation), camera.translationM);
  return [-c[0], -c[1], -c[2]];
}

/** Projects a world point (metres) to pixels; `depthM ≤ 0` means behind the camera. */
export function projectPoint(camera: PinholeCamera, point: Vec3): Projection {
  const [x, y, z] = mat3MulVec(camera.rotation, point);
  const X = x + camera.translationM[0];
  const Y = y + camera.translationM[1];
  const Z = z + camera.translationM[2];
  return { u: (camera.fx * X) / Z + camera.cx, v: (camera.fy * Y) / Z + camera.cy, depthM: Z };
}

/**
 * The homography from the pitch plane (z = 0, metres) to this camera's
 * pixels: `H = K·[r1 r2 t]` where r1, r2 are the first two columns of R
 * (Hartley & Zisserman §8.1.1, plane-induced homography).
 */
export function pitchToImageHomography(camera: PinholeCamera): number[] {
  const R = camera.rotation;
  const t = camera.translationM;
  const Rt = [
    R[0] as number,
    R[1] as number,
    t[0],
    R[3] as number,
    R[4] as number,
    t[1],
    R[6] as number,
    R[7] as number,
    t[2],
  ];
  return normalizeHomography(mat3Multiply(intrinsicMatrix(camera), Rt));
}

/** The inverse: pixels to the pitch plane (metres). */
export function imageToPitchHomography(camera: PinholeCamera): number[] {
  return normalizeHomography(mat3Invert(pitchToImageHomography(camera)));
}

/**
 * A world-to-camera rotation that looks from `eye` at `target` with no roll
 * (the camera's x axis stays horizontal), world z up.
 * @throws RangeError when the view direction is vertical (roll undefined).
 */
export function lookAtRotation(eye: Vec3, target: Vec3): number[] {
  const forward = vecNormalize(vecSub(target, eye));
  const rightRaw = vecCross(forward, [0, 0, 1]);
  if (Math.hypot(...rightRaw) < 1e-9) throw new RangeError('look-at direction is vertical');
  const right = vecNormalize(rightRaw);
  const down = vecCross(forward, right);
  return [...right, ...down, ...forward];
}

/** Builds a camera at `eye` (metres) looking at `target` with the given intrinsics. */
export function cameraLookingAt(
  eye: Vec3,
  target: Vec3,
  intrinsics: { widthPx: number; heightPx: number; focalPx: number; cx?: number; cy?: number },
): PinholeCamera {
  const rotation = lookAtRotation(eye, target);
  const rc = mat3MulVec(rotation, eye);
  return {
    widthPx: intrinsics.widthPx,
    heightPx: intrinsics.heightPx,
    fx: intrinsics.focalPx,
    fy: intrinsics.focalPx,
    cx: intrinsics.cx ?? (intrinsics.widthPx - 1) / 2,
    cy: intrinsics.cy ?? (intrinsics.heightPx - 1) / 2,
    rotation,
    translationM: [-rc[0], -rc[1], -rc[2]],
  };
}

/**
 * The world-space direction of the ray through pixel (u, v) (not normalised):
 * `d = Rᵀ·K⁻¹·[u, v, 1]`.
 */
export function pixelRay(camera: PinholeCamera, u: number, v: number): [number, number, number] {
  const xn = (u - camera.cx) / camera.fx;
  const yn = (v - camera.cy) / camera.fy;
  const R = camera.rotation;
  return [
    (R[0] as number) * xn + (R[3] as number) * yn + (R[6] as number),
    (R[1] as number) * xn + (R[4] as number) * yn + (R[7] as number),
    (R[2] as number) * xn + (R[5] as number) * yn + (R[8] as number),
  ];
}
