import { pitchMappingOf, type VenueCalibration } from '@polyvision/shared';

/** A closed polygon in panorama pixels, vertices `[x, y]` in order. */
export type Polygon = readonly (readonly [number, number])[];

/** Where the pitch is in the panorama; `source` says how it was found. */
export interface PitchRegion {
  source: 'calibration' | 'grass' | 'none';
  /** Whether a panorama point (e.g. a foot point) lies on the pitch (always true for `none`). */
  contains(x: number, y: number): boolean;
  /** Outline in panorama pixels (the calibrated pitch, or the grass component's bounding polygon); empty for `none`. */
  outline: Polygon;
}

/** Ray-casting point-in-polygon test (W. R. Franklin, PNPOLY). */
export function pointInPolygon(polygon: Polygon, x: number, y: number): boolean {
  let inside = false;
  for (let i = 0, j = polygon.length - 1; i < polygon.length; j = i++) {
    const [xi, yi] = polygon[i]!;
    const [xj, yj] = polygon[j]!;
    if (yi > y !== yj > y && x < ((xj - xi) * (y - yi)) / (yj - yi) + xi) inside = !inside;
  }
  return inside;
}

/**
 * The pitch outline in panorama pixels from a venue calibration: the pitch
 * rectangle `[−L/2 − m, L/2 + m] × [−W/2 − m, W/2 + m]` (metres, `m` =
 * `marginM` so players on the lines count) sampled along its edges through the
 * venue's pitch mapping (`pitchMappingOf`: a homography, or one per camera's part
 * of the panorama, so straight edges stay straight within a part; samples keep
 * the polygon valid when a corner maps behind the camera, which is then dropped).
 *
 * @returns null when fewer than 3 outline points map into the image plane, or when the venue has no
 *   pitch frame (`pitchMappingOf` null: a self-calibrated rig without pitch points; the grass decides then).
 */
export function pitchRegionFromCalibration(venue: VenueCalibration, marginM = 2): PitchRegion | null {
  const mapping = pitchMappingOf(venue);
  if (!mapping) return null;
  const L = venue.pitch.length_m / 2 + marginM;
  const W = venue.pitch.width_m / 2 + marginM;
  const corners: [number, number][] = [
    [-L, -W],
    [L, -W],
    [L, W],
    [-L, W],
  ];
  const outline: [number, number][] = [];
  const steps = 32;
  for (let c = 0; c < 4; c++) {
    const [ax, ay] = corners[c]!;
    const [bx, by] = corners[(c + 1) % 4]!;
    for (let s = 0; s < steps; s++) {
      const X = ax + ((bx - ax) * s) / steps;
      const Y = ay + ((by - ay) * s) / steps;
      const at = mapping.toPanorama(X, Y);
      if (at) outline.push(at);
    }
  }
  if (outline.length < 3) return null;
  return { source: 'calibration', outline, contains: (x, y) => pointInPolygon(outline, x, y) };
}

/** No pitch known: every point counts. */
export const NO_PITCH_REGION: PitchRegion = { source: 'none', outline: [], contains: () => true };
