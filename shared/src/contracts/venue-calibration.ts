/**
 * Venue calibration: what the edge stitcher (and the analysis stages) know
 * about a stadium's fixed cameras, written as `venue.json`.
 *
 * Frames and conventions:
 * - **Pitch frame** (metres): origin at the centre spot, x along the length
 *   towards the right-hand goal as seen from the camera side, y across the
 *   pitch away from the cameras, z up. The pitch is `[-L/2, L/2] × [-W/2, W/2]`.
 * - **Camera frame**: OpenCV convention, x right, y down, z along the optical
 *   axis. A pitch point X maps to it as `Xc = R·X + t` (`rotation`,
 *   `translation_m`) and to pixels as `[u, v, 1] ~ K·Xc` then lens distortion
 *   (OpenCV's Brown–Conrady model, coefficients `k1 k2 p1 p2 k3`; all zero for
 *   synthetic cameras). Pixel (0, 0) is the centre of the top-left pixel.
 * - **Panorama**: a planar panorama, i.e. the image of a virtual pinhole
 *   camera (`panorama.intrinsics`, `panorama.rotation`,
 *   `panorama.translation_m`), usually placed at the rig centre.
 *   `cameras[i].image_to_panorama` maps undistorted camera pixels to panorama
 *   pixels; when the cameras share the panorama's optical centre it is exact
 *   for every scene point (`K_p·R_p·R_iᵀ·K_i⁻¹`), otherwise only for points on
 *   the pitch plane. `panorama.pitch_to_panorama` and its inverse map pitch
 *   metres (z = 0) to panorama pixels and back.
 * - **Matrices** are written as three rows of three numbers; homographies
 *   are normalised so that the bottom-right entry is 1 and act on
 *   homogeneous column vectors `[u, v, 1]ᵀ` (Hartley & Zisserman, Multiple
 *   View Geometry, §2.3 and §8.1).
 */
import { z } from 'zod';

/** zod 4 numbers are finite (no NaN, no ±Infinity). */
const finite = z.number();
/** A 3 × 3 matrix as three rows. */
export const matrix3x3Schema = z.tuple([
  z.tuple([finite, finite, finite]),
  z.tuple([finite, finite, finite]),
  z.tuple([finite, finite, finite]),
]);
export type Matrix3x3 = z.infer<typeof matrix3x3Schema>;
const vector3 = z.tuple([finite, finite, finite]);
const pixels = z.number().int().min(1).max(65_536);

/** Pinhole intrinsics in pixels. */
export const cameraIntrinsicsSchema = z.object({
  fx: finite.positive(),
  fy: finite.positive(),
  cx: finite,
  cy: finite,
});
export type CameraIntrinsics = z.infer<typeof cameraIntrinsicsSchema>;

/** Brown–Conrady distortion coefficients (OpenCV order). */
export const distortionSchema = z.object({ k1: finite, k2: finite, p1: finite, p2: finite, k3: finite });

/** One fixed camera of the venue. */
export const venueCameraSchema = z.object({
  /** Stable camera id, also the file stem of its recording (`camera-0`). */
  id: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,63}$/),
  width_px: pixels,
  height_px: pixels,
  intrinsics: cameraIntrinsicsSchema,
  distortion: distortionSchema,
  /** World-to-camera rotation R (`Xc = R·X + t`). */
  rotation: matrix3x3Schema,
  /** World-to-camera translation t, metres. */
  translation_m: vector3,
  /** The camera's optical centre in the pitch frame (`−Rᵀ·t`), metres. */
  position_m: vector3,
  /** Pitch plane (metres, z = 0) → this camera's pixels. */
  pitch_to_image: matrix3x3Schema,
  /** This camera's pixels → panorama pixels. */
  image_to_panorama: matrix3x3Schema,
});
export type VenueCamera = z.infer<typeof venueCameraSchema>;

/** The planar panorama the stitcher produces. */
export const venuePanoramaSchema = z.object({
  /** `planar`: a virtual pinhole camera (the only projection defined so far). */
  projection: z.literal('planar'),
  width_px: pixels,
  height_px: pixels,
  intrinsics: cameraIntrinsicsSchema,
  rotation: matrix3x3Schema,
  translation_m: vector3,
  /** Pitch plane (metres, z = 0) → panorama pixels. */
  pitch_to_panorama: matrix3x3Schema,
  /** Panorama pixels → pitch plane (metres); points above the horizon map behind the camera. */
  panorama_to_pitch: matrix3x3Schema,
});
export type VenuePanorama = z.infer<typeof venuePanoramaSchema>;

/** `venue.json`: the calibration of one venue's camera rig. */
export const venueCalibrationSchema = z.object({
  version: z.literal(1),
  venue_id: z.string().min(1).max(128),
  pitch: z.object({ length_m: finite.positive(), width_m: finite.positive() }),
  cameras: z.array(venueCameraSchema).min(1).max(16),
  panorama: venuePanoramaSchema,
});
export type VenueCalibration = z.infer<typeof venueCalibrationSchema>;
