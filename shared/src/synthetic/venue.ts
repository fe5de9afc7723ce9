/**
 * The rig as a venue calibration file (`venue.json`, see
 * shared/src/contracts/venue-calibration.ts).
 */
import type { Matrix3x3, VenueCalibration } from '../contracts/venue-calibration.ts';
import { cameraCentre, intrinsicMatrix, type PinholeCamera, pitchToImageHomography } from './camera.ts';
import { type Mat3, mat3Invert, mat3Multiply, mat3Rows, mat3Transpose, normalizeHomography } from './mat3.ts';
import { PITCH_LENGTH_M, PITCH_WIDTH_M } from './pitch.ts';
import type { Rig } from './rig.ts';

const rows = (m: Mat3): Matrix3x3 => mat3Rows(m);

/**
 * The homography from a camera's pixels to the panorama's pixels for cameras
 * that share the panorama's optical centre: `K_p·R_p·R_iᵀ·K_i⁻¹` (the
 * rotation-induced homography, Hartley & Zisserman §8.4.2).
 */
export function imageToPanoramaHomography(camera: PinholeCamera, panorama: PinholeCamera): number[] {
  const toRay = mat3Multiply(mat3Transpose(camera.rotation), mat3Invert(intrinsicMatrix(camera)));
  return normalizeHomography(mat3Multiply(mat3Multiply(intrinsicMatrix(panorama), panorama.rotation), toRay));
}

/** Builds the calibration document of a rig; camera ids are `camera-<index>`. */
export function venueCalibrationOf(rig: Rig, venueId: string): VenueCalibration {
  const panoPitch = pitchToImageHomography(rig.panorama);
  return {
    version: 1,
    venue_id: venueId,
    pitch: { length_m: PITCH_LENGTH_M, width_m: PITCH_WIDTH_M },
    cameras: rig.cameras.map((c, i) => ({
      id: `camera-${i}`,
      width_px: c.widthPx,
      height_px: c.heightPx,
      intrinsics: { fx: c.fx, fy: c.fy, cx: c.cx, cy: c.cy },
      distortion: { k1: 0, k2: 0, p1: 0, p2: 0, k3: 0 },
      rotation: rows(c.rotation),
      translation_m: [...c.translationM],
      position_m: cameraCentre(c),
      pitch_to_image: rows(pitchToImageHomography(c)),
      image_to_panorama: rows(imageToPanoramaHomography(c, rig.panorama)),
    })),
    panorama: {
      projection: 'planar',
      width_px: rig.panorama.widthPx,
      height_px: rig.panorama.heightPx,
      intrinsics: { fx: rig.panorama.fx, fy: rig.panorama.fy, cx: rig.panorama.cx, cy: rig.panorama.cy },
      rotation: rows(rig.panorama.rotation),
      translation_m: [...rig.panorama.translationM],
      pitch_to_panorama: rows(panoPitch),
      panorama_to_pitch: rows(normalizeHomography(mat3Invert(panoPitch))),
    },
  };
}

/** A camera model back from its calibration entry (no distortion). */
export function cameraFromCalibration(entry: {
  width_px: number;
  height_px: number;
  intrinsics: { fx: number; fy: number; cx: number; cy: number };
  rotation: Matrix3x3;
  translation_m: readonly [number, number, number];
}): PinholeCamera {
  return {
    widthPx: entry.width_px,
    heightPx: entry.height_px,
    ...entry.intrinsics,
    rotation: entry.rotation.flat(),
    translationM: [...entry.translation_m],
  };
}
