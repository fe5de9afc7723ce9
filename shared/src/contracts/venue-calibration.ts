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
  /**
   * The lens as a one-parameter division model (Fitzgibbon 2001), when it was estimated that way:
   * undistorted `p_u = c + (p_d − c) / (1 + λ·|p_d − c|² / norm_px²)`. Exact where `distortion`
   * (its Brown–Conrady least-squares fit) is only close; the stitcher uses it when present.
   */
  division_model: z
    .object({ lambda: finite, center_px: z.tuple([finite, finite]), norm_px: finite.positive() })
    .optional(),
  /**
   * Seconds dropped from the start of this camera's video before stitching, so
   * that its frames are in step with the other cameras' (measured by the
   * self-calibration). @defaultValue 0
   */
  time_offset_s: finite.min(0).max(3600).optional(),
  /** Gains applied to this camera's R, G, B before blending, balancing exposure and colour across the seams. @defaultValue [1, 1, 1] */
  color_gains: z.tuple([finite.positive(), finite.positive(), finite.positive()]).optional(),
  /**
   * A smooth displacement added to panorama pixels before this camera's inverse
   * `image_to_panorama` (seam alignment: residual parallax in the overlap, measured
   * by optical flow at calibration time). A grid of `cols × rows` nodes, `step_px`
   * apart, the first at panorama pixel (`x_px`, `y_px`); `dx_px`/`dy_px` row-major,
   * panorama pixels, interpolated bilinearly; zero outside the grid. Absent: no warp.
   */
  panorama_warp: z
    .object({
      x_px: z.number().int(),
      y_px: z.number().int(),
      step_px: z.number().int().positive(),
      cols: z.number().int().min(2),
      rows: z.number().int().min(2),
      dx_px: z.array(finite),
      dy_px: z.array(finite),
    })
    .refine((w) => w.dx_px.length === w.cols * w.rows && w.dy_px.length === w.cols * w.rows, {
      message: 'panorama_warp: dx_px and dy_px must hold cols × rows values',
    })
    .optional(),
});
export type VenueCamera = z.infer<typeof venueCameraSchema>;

/** The panorama the stitcher produces. */
export const venuePanoramaSchema = z
  .object({
    /**
     * `planar`: a virtual pinhole camera; the homographies below and each camera's `image_to_panorama`
     * map to panorama pixels. `cylindrical`: they map to the panorama's plane, which `cylinder` wraps
     * onto the panorama (equal angles per column: a wide rig's sides are not stretched). Read them through
     * `panoramaProjectionOf` and `pitchMappingOf` (shared/src/venue).
     */
    projection: z.enum(['planar', 'cylindrical']),
    /** The cylinder of a `cylindrical` panorama: focal length and centre, panorama-plane pixels. */
    cylinder: z.object({ focal_px: finite.positive(), center_px: z.tuple([finite, finite]) }).optional(),
    width_px: pixels,
    height_px: pixels,
    intrinsics: cameraIntrinsicsSchema,
    rotation: matrix3x3Schema,
    translation_m: vector3,
    /** Pitch plane (metres, z = 0) → panorama pixels. */
    pitch_to_panorama: matrix3x3Schema,
    /** Panorama pixels → pitch plane (metres); points above the horizon map behind the camera. */
    panorama_to_pitch: matrix3x3Schema,
    /**
     * For a two-camera rig: the seam between camera 0 and camera 1, one panorama column per
     * panorama row (a least-difference path through the overlap). The stitcher blends the
     * cameras over `seam_feather_px` around it instead of feathering the whole overlap. Absent:
     * distance-weighted feathering.
     */
    seam_x_px: z.array(finite).optional(),
    /** Width of the blend across `seam_x_px`, panorama pixels. @defaultValue 32 */
    seam_feather_px: finite.positive().optional(),
    /**
     * The pitch frame per camera, when the panorama is not one projective image of the pitch plane:
     * cameras apart from each other (a self-calibrated rig, whose cameras are joined by a homography
     * of the whole scene, not of the pitch) map the pitch by one homography each: `[0]` the
     * panorama left of `seam_x_px` (required with these), `[1]` the rest. `pitch_to_panorama` and
     * `panorama_to_pitch` are then `[0]`'s. Read them through
     * `pitchMappingOf` (shared/src/venue). Absent: one homography for the whole panorama.
     */
    pitch_parts: z
      .array(z.object({ pitch_to_panorama: matrix3x3Schema, panorama_to_pitch: matrix3x3Schema }))
      .length(2)
      .optional(),
  })
  .refine((p) => !p.pitch_parts || p.seam_x_px?.length === p.height_px, {
    message: 'pitch_parts needs seam_x_px, one column per panorama row (which camera a pixel is)',
    path: ['pitch_parts'],
  })
  .refine((p) => (p.projection === 'cylindrical') === (p.cylinder !== undefined), {
    message: 'a cylindrical panorama needs its cylinder, and only it has one',
    path: ['cylinder'],
  });
export type VenuePanorama = z.infer<typeof venuePanoramaSchema>;

/** How a calibration was made and how well it fits (written by `polyvision edge calibrate`). */
export const calibrationQualitySchema = z.object({
  /** `features`: self-calibrated from the footage; `points`: from point pairs; `synthetic`: exact. */
  method: z.enum(['features', 'points', 'synthetic']),
  /**
   * False when the pitch frame (`pitch_to_image`, `panorama.pitch_to_panorama`) was not measured:
   * those matrices then only place the pitch rectangle over the panorama and must not be read as metres.
   */
  pitch_registered: z.boolean(),
  /**
   * The pitch points the pitch frame was registered from (`polyvision edge calibrate --pitch-points`),
   * and how far, in metres, they lie from where the fitted homography puts them (RMS, worst).
   */
  pitch_points: z.number().int().min(4).optional(),
  pitch_rms_error_m: finite.min(0).optional(),
  pitch_max_error_m: finite.min(0).optional(),
  /** RMS transfer error of the inlier feature matches between the cameras, camera pixels. */
  reprojection_error_px: finite.min(0).optional(),
  /** Distance between the panorama positions of the two sides of each inlier match, panorama pixels. */
  seam_error_mean_px: finite.min(0).optional(),
  seam_error_p95_px: finite.min(0).optional(),
  matches: z.number().int().min(0).optional(),
  inliers: z.number().int().min(0).optional(),
  /** Fraction of the panorama that two cameras see. */
  overlap_fraction: finite.min(0).max(1).optional(),
  /** Measured offset of the second camera against the first, seconds (positive: it lags). */
  time_offset_s: finite.optional(),
  /** Correlation of the cameras' motion energy at that offset (−1…1). */
  time_offset_correlation: finite.optional(),
  /** Worst deviation of pitch-line pixels from their fitted straight lines, camera pixels, before/after undistortion. */
  line_deviation_px: z.object({ distorted: finite.min(0), undistorted: finite.min(0) }).optional(),
  /** Panorama pixels per source pixel (linear) over the pitch lines: the smallest and the median. */
  pixel_density: z.object({ min: finite.min(0), median: finite.min(0) }).optional(),
  calibration_ms: finite.min(0).optional(),
  /**
   * Fraction (0–1) of the panorama's pixels that no camera sees (painted with the fill colour). A
   * self-calibrated panorama is cropped to what the cameras see, so this is 0 unless keeping the pitch forced it.
   */
  unseen_fraction: finite.min(0).max(1).optional(),
});
export type CalibrationQuality = z.infer<typeof calibrationQualitySchema>;

/** `venue.json`: the calibration of one venue's camera rig. */
export const venueCalibrationSchema = z.object({
  version: z.literal(1),
  venue_id: z.string().min(1).max(128),
  pitch: z.object({ length_m: finite.positive(), width_m: finite.positive() }),
  cameras: z.array(venueCameraSchema).min(1).max(16),
  panorama: venuePanoramaSchema,
  /** How the calibration was made and its measured quality; absent in older files. */
  quality: calibrationQualitySchema.optional(),
});
export type VenueCalibration = z.infer<typeof venueCalibrationSchema>;
