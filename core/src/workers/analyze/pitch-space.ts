import { PolyvisionError, pitchMappingOf, type VenueCalibration } from '@polyvision/shared';

/** Where positions are measured: pitch metres through a homography, or plain image pixels. */
export interface PositionSpace {
  kind: 'pitch' | 'image';
  /** Unit of positions, distances and speeds ('m' or 'px'). */
  unit: 'm' | 'px';
  /** Bounds `[xMin, yMin, xMax, yMax]` in the space's unit. */
  bounds: [number, number, number, number];
  /** Image pixel → space position; null for points that do not map (above the horizon). */
  fromImage(u: number, v: number): [number, number] | null;
}

/**
 * The pitch frame of a venue calibration (`venue.json`, see
 * `shared/src/contracts/venue-calibration.ts`): panorama pixels → metres
 * through the venue's pitch mapping (`pitchMappingOf`: `panorama.panorama_to_pitch`, or per
 * camera's part of the panorama); bounds are the pitch `[−L/2, L/2] × [−W/2, W/2]`.
 *
 * @returns null when the venue has no measured pitch frame (a self-calibrated rig without pitch
 *   points: `pitchMappingOf`).
 * @throws PolyvisionError `calibration_invalid` when the panorama size differs from the video's.
 */
export function pitchSpace(venue: VenueCalibration, videoWidth: number, videoHeight: number): PositionSpace | null {
  if (venue.panorama.width_px !== videoWidth || venue.panorama.height_px !== videoHeight) {
    throw new PolyvisionError(
      'calibration_invalid',
      `venue ${venue.venue_id} describes a ${venue.panorama.width_px}×${venue.panorama.height_px} panorama, the video is ${videoWidth}×${videoHeight}`,
    );
  }
  const mapping = pitchMappingOf(venue);
  if (!mapping) return null;
  const L = venue.pitch.length_m;
  const W = venue.pitch.width_m;
  return {
    kind: 'pitch',
    unit: 'm',
    bounds: [-L / 2, -W / 2, L / 2, W / 2],
    fromImage: (u, v) => mapping.toPitch(u, v),
  };
}

/** Image space: positions stay in pixels (footage without a calibration, e.g. one plain camera). */
export function imageSpace(width: number, height: number): PositionSpace {
  return { kind: 'image', unit: 'px', bounds: [0, 0, width, height], fromImage: (u, v) => [u, v] };
}
