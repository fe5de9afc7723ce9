import { pitchMappingOf, type VenueCalibration } from '@polyvision/shared';

/** Whether an image point (px) lies on the pitch. */
export type PitchRegion = (x: number, y: number) => boolean;

/**
 * The pitch of a venue calibration as a test on panorama pixels: the point maps through the
 * venue's pitch mapping (`pitchMappingOf`) into `[−L/2 − m, L/2 + m] × [−W/2 − m, W/2 + m]` (metres, `m` the
 * margin: players take throw-ins and corners from just outside the lines, assistant referees run
 * along them). Used on foot points (people) and centres (ball).
 *
 * @returns null when the calibration describes another image size than the detections' (the
 *   region would be wrong; the caller says so and goes on without it), or has no pitch frame
 *   (`pitchMappingOf` null: a self-calibrated rig without pitch points).
 */
export function pitchRegionOf(
  venue: VenueCalibration,
  widthPx: number,
  heightPx: number,
  marginM = 2,
): PitchRegion | null {
  if (venue.panorama.width_px !== widthPx || venue.panorama.height_px !== heightPx) return null;
  const mapping = pitchMappingOf(venue);
  if (!mapping) return null;
  const halfL = venue.pitch.length_m / 2 + marginM;
  const halfW = venue.pitch.width_m / 2 + marginM;
  return (x, y) => {
    const p = mapping.toPitch(x, y);
    return p !== null && Math.abs(p[0]) <= halfL && Math.abs(p[1]) <= halfW;
  };
}
