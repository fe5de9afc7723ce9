import type { Matrix3x3, VenueCalibration } from '../contracts/venue-calibration.ts';
import { panoramaProjectionOf } from './panorama-projection.ts';

/** Between a venue's panorama pixels and its pitch (metres, the venue contract's pitch frame). */
export interface PitchMapping {
  /** Panorama pixel → pitch point, metres; null above the horizon (behind the panorama camera). */
  toPitch(u: number, v: number): [number, number] | null;
  /** Pitch point (metres, z = 0) → panorama pixel; null where it does not map in front of the camera. */
  toPanorama(x: number, y: number): [number, number] | null;
}

/** A homography on the side of the plane where the pitch is (`side`: the sign its third coordinate takes there). */
interface Sided {
  h: Matrix3x3;
  side: number;
}

function apply({ h, side }: Sided, a: number, b: number): [number, number] | null {
  const w = h[2][0] * a + h[2][1] * b + h[2][2];
  if (!(w * side > 1e-12)) return null;
  return [(h[0][0] * a + h[0][1] * b + h[0][2]) / w, (h[1][0] * a + h[1][1] * b + h[1][2]) / w];
}

/**
 * One part's homographies, each with the sign its third coordinate has on the pitch: that of
 * `pitch_to_panorama` at the centre spot, and that of `panorama_to_pitch` at the centre spot's
 * panorama pixel. A homography is defined up to scale, sign included (Hartley & Zisserman §2.3);
 * files normalise the bottom-right entry to 1, which flips the sign when the panorama's pixel
 * (0, 0) is above the horizon, so the sign is read off the pitch instead.
 */
function sided(part: { pitch_to_panorama: Matrix3x3; panorama_to_pitch: Matrix3x3 }): { to: Sided; from: Sided } {
  const to = part.pitch_to_panorama;
  const toSide = Math.sign(to[2][2]) || 1;
  const centre = apply({ h: to, side: toSide }, 0, 0);
  const from = part.panorama_to_pitch;
  const fromSide = centre ? Math.sign(from[2][0] * centre[0] + from[2][1] * centre[1] + from[2][2]) || 1 : 1;
  return { to: { h: to, side: toSide }, from: { h: from, side: fromSide } };
}

/**
 * Whether a venue's pitch frame was measured: false for a self-calibrated rig without pitch points
 * (`quality.pitch_registered` false), whose pitch homographies only lay the pitch rectangle over the
 * panorama and must not be read as metres or as where the pitch is. Files without `quality` (older
 * point calibrations, synthetic rigs) count as registered.
 */
export function isPitchRegistered(venue: VenueCalibration): boolean {
  return venue.quality?.pitch_registered !== false;
}

/**
 * Which part of a two-camera panorama a pixel is in: 0 left of the seam (`seam_x_px`, one column
 * per row; rows outside clamped), 1 on it or right of it. The one rule for `pitch_parts`.
 */
export function seamPart(seamXPx: readonly number[], u: number, v: number): 0 | 1 {
  return u < (seamXPx[Math.min(seamXPx.length - 1, Math.max(0, Math.round(v)))] as number) ? 0 : 1;
}

/**
 * The pitch mapping of a venue calibration (shared/src/contracts/venue-calibration.ts): through
 * `panorama.pitch_to_panorama` / `panorama_to_pitch` (on the panorama's plane: `panoramaProjectionOf`), or, where the venue has `pitch_parts` (a
 * self-calibrated two-camera rig registered by pitch points), through the part for the pixel's
 * side of `seam_x_px` (`[0]` left of it). A pitch point goes to the panorama through the part whose
 * side of the seam its image lands on (the left part's where both or neither do).
 *
 * @returns null when the venue has no measured pitch frame ({@link isPitchRegistered}): its pitch
 *   homographies only lay a rectangle over the panorama, so no reader may take them for the pitch.
 */
export function pitchMappingOf(venue: VenueCalibration): PitchMapping | null {
  if (!isPitchRegistered(venue)) return null;
  const p = venue.panorama;
  const parts = p.pitch_parts && p.seam_x_px ? p.pitch_parts.map(sided) : [sided(p)];
  const seam = p.seam_x_px;
  // The homographies act on the panorama's plane (a cylindrical panorama wraps it).
  const projection = panoramaProjectionOf(p);
  const fromPlane = (q: [number, number] | null) => (q ? projection.fromPlane(q[0], q[1]) : null);
  const planeOf = (u: number, v: number) => projection.toPlane(u, v);
  if (parts.length === 1 || !seam) {
    const [one] = parts as [{ to: Sided; from: Sided }];
    return {
      toPitch: (u, v) => apply(one.from, ...planeOf(u, v)),
      toPanorama: (x, y) => fromPlane(apply(one.to, x, y)),
    };
  }
  const [left, right] = parts as [{ to: Sided; from: Sided }, { to: Sided; from: Sided }];
  return {
    toPitch: (u, v) => apply(seamPart(seam, u, v) === 0 ? left.from : right.from, ...planeOf(u, v)),
    toPanorama: (x, y) => {
      const a = fromPlane(apply(left.to, x, y));
      if (a && seamPart(seam, a[0], a[1]) === 0) return a;
      const b = fromPlane(apply(right.to, x, y));
      if (b && seamPart(seam, b[0], b[1]) === 1) return b;
      return a ?? b;
    },
  };
}
