import type { VenuePanorama } from '../contracts/venue-calibration.ts';

/**
 * Between a venue's panorama pixels and its panorama plane: the plane the venue's homographies map to
 * (`image_to_panorama` of each camera, `pitch_to_panorama`, `panorama_to_pitch`, `pitch_parts`).
 *
 * - `planar`: the panorama is the plane (both functions are the identity).
 * - `cylindrical`: the plane is wrapped on a cylinder about the vertical axis through the plane point
 *   `cylinder.center_px` = (cx, cy) at distance f = `cylinder.focal_px` (cylindrical coordinates with
 *   the scale s = f: Szeliski, "Image Alignment and Stitching: A Tutorial", 2006, §2.1):
 *   X = cx + f·atan((x − cx)/f), Y = cy + f·(y − cy)/√(f² + (x − cx)²).
 *   Columns are equal angles, so a wide rig's sides are not stretched (a plane's pixels per degree
 *   grow as 1/cos²θ); straight lines on the pitch become smooth curves, with no kink anywhere.
 */
export interface PanoramaProjection {
  /** Panorama pixel → panorama plane; NaN beyond ±90° from the centre. */
  toPlane(x: number, y: number): [number, number];
  /** Panorama plane → panorama pixel. */
  fromPlane(x: number, y: number): [number, number];
  /** True for the identity (a planar panorama): callers may skip it. */
  identity: boolean;
}

/** The planar panorama's projection: the identity. */
export const IDENTITY_PROJECTION: PanoramaProjection = {
  toPlane: (x, y) => [x, y],
  fromPlane: (x, y) => [x, y],
  identity: true,
};

/**
 * The cylinder of {@link PanoramaProjection} with focal length `focalPx` about the plane point (cx, cy).
 * @throws RangeError when `focalPx` is not a positive finite number.
 */
export function cylindricalProjection(focalPx: number, cx: number, cy: number): PanoramaProjection {
  if (!(focalPx > 0 && Number.isFinite(focalPx))) throw new RangeError(`cylinder focal length ${focalPx} px`);
  const f = focalPx;
  return {
    toPlane: (x, y) => {
      const theta = (x - cx) / f;
      if (!(Math.abs(theta) < Math.PI / 2 - 1e-6)) return [Number.NaN, Number.NaN];
      return [cx + f * Math.tan(theta), cy + (y - cy) / Math.cos(theta)];
    },
    fromPlane: (x, y) => {
      const dx = x - cx;
      return [cx + f * Math.atan2(dx, f), cy + (f * (y - cy)) / Math.hypot(f, dx)];
    },
    identity: false,
  };
}

/** The projection of a venue's panorama (identity for `planar`). */
export function panoramaProjectionOf(panorama: Pick<VenuePanorama, 'projection' | 'cylinder'>): PanoramaProjection {
  if (panorama.projection !== 'cylindrical' || !panorama.cylinder) return IDENTITY_PROJECTION;
  const { focal_px, center_px } = panorama.cylinder;
  return cylindricalProjection(focal_px, center_px[0], center_px[1]);
}
