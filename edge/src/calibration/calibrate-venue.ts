/**
 * Fills a venue calibration's per-camera `image_to_panorama` (and, from
 * pitch points, `pitch_to_image`) from point correspondences: manual points
 * clicked by an installer, or detected pitch markings.
 */
import {
  mat3FromRows,
  mat3Invert,
  mat3Multiply,
  mat3Rows,
  normalizeHomography,
  ValidationError,
  type VenueCalibration,
} from '@polyvision/shared';
import { z } from 'zod';
import type { Point2 } from './dlt.ts';
import { homographyRansac, type RansacOptions } from './ransac.ts';

const point = z.tuple([z.number(), z.number()]);

/** The correspondences of one camera: image pixels ↔ panorama pixels, or image pixels ↔ pitch metres (z = 0). */
export const cameraCorrespondencesSchema = z.object({
  camera_id: z.string(),
  points: z
    .array(z.union([z.object({ image_px: point, panorama_px: point }), z.object({ image_px: point, pitch_m: point })]))
    .min(4, 'at least 4 point pairs per camera'),
});
export type CameraCorrespondences = z.infer<typeof cameraCorrespondencesSchema>;

/** Per-camera fit quality. */
export interface CameraFit {
  cameraId: string;
  inliers: number;
  points: number;
  /** RMS transfer error over the inliers, in the target's units (panorama px, or metres for pitch points). */
  rmsError: number;
}

/**
 * Returns a copy of `venue` whose cameras listed in `correspondences` get
 * homographies estimated by RANSAC + normalised DLT. Pitch points give
 * `pitch_to_image` = (image→pitch)⁻¹ and `image_to_panorama` =
 * `pitch_to_panorama · image→pitch` (exact for the pitch plane only); panorama
 * points give `image_to_panorama` directly. All pairs of one camera must be of one kind.
 *
 * @throws ValidationError `calibration_unknown_camera`, `calibration_mixed_points`,
 *   `calibration_too_few_points`, `calibration_degenerate`; PolyvisionError `calibration_no_consensus`.
 */
export function calibrateVenue(
  venue: VenueCalibration,
  correspondences: readonly CameraCorrespondences[],
  options: RansacOptions = {},
): { venue: VenueCalibration; fits: CameraFit[] } {
  const cameras = venue.cameras.map((c) => ({ ...c }));
  const fits: CameraFit[] = [];
  for (const entry of correspondences) {
    const camera = cameras.find((c) => c.id === entry.camera_id);
    if (!camera) {
      throw new ValidationError(
        'calibration_unknown_camera',
        `points for camera "${entry.camera_id}", which the venue does not have`,
      );
    }
    const src: Point2[] = entry.points.map((p) => p.image_px);
    const pitch = entry.points.filter((p) => 'pitch_m' in p).length;
    if (pitch !== 0 && pitch !== entry.points.length) {
      throw new ValidationError(
        'calibration_mixed_points',
        `camera "${entry.camera_id}" mixes pitch and panorama points`,
      );
    }
    if (pitch > 0) {
      const dst = entry.points.map((p) => (p as { pitch_m: [number, number] }).pitch_m);
      // Pitch units are metres: scale the pixel threshold by the panorama scale is unknown here, so use 0.25 m.
      const fit = homographyRansac(src, dst, { thresholdPx: 0.25, ...options });
      const imageToPitch = fit.homography;
      camera.pitch_to_image = mat3Rows(normalizeHomography(mat3Invert(imageToPitch)));
      camera.image_to_panorama = mat3Rows(
        normalizeHomography(mat3Multiply(mat3FromRows(venue.panorama.pitch_to_panorama), imageToPitch)),
      );
      fits.push({ cameraId: camera.id, inliers: fit.inliers.length, points: src.length, rmsError: fit.rmsErrorPx });
    } else {
      const dst = entry.points.map((p) => (p as { panorama_px: [number, number] }).panorama_px);
      const fit = homographyRansac(src, dst, options);
      camera.image_to_panorama = mat3Rows(fit.homography);
      fits.push({ cameraId: camera.id, inliers: fit.inliers.length, points: src.length, rmsError: fit.rmsErrorPx });
    }
  }
  return { venue: { ...venue, cameras }, fits };
}
