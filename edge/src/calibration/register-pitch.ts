/**
 * Registers a venue's panorama to the pitch (metres) from pitch points an installer reads off the
 * cameras' frames once: "this pixel of camera A is the corner flag, that one the centre circle on
 * the halfway line". A self-calibrated venue knows its cameras and its panorama but not where the
 * pitch is (`quality.pitch_registered` false); with this, the analytics are in metres.
 */
import { readFile } from 'node:fs/promises';
import {
  applyHomography,
  mat3FromRows,
  mat3Invert,
  mat3Multiply,
  mat3MulVec,
  mat3Rows,
  normalizeHomography,
  panoramaProjectionOf,
  seamPart,
  ValidationError,
  type VenueCalibration,
  type VenueCamera,
} from '@polyvision/shared';
import { z } from 'zod';
import { homographyDlt, type Point2 } from './dlt.ts';
import { undistortBrown, undistortDivision } from './self/lens-distortion.ts';
import { warpAt } from './self/seam-alignment.ts';

const point = z.tuple([z.number(), z.number()]);

/**
 * `pitch-points.json`: pitch markings seen by the venue's cameras.
 * ```json
 * {"pitch": {"length_m": 105, "width_m": 68},
 *  "points": [{"camera": "left", "image_px": [127, 1140], "pitch_m": [-52.5, -34], "name": "near left corner"},
 *             {"panorama_px": [2350, 980], "pitch_m": [0, -34]}, …]}
 * ```
 * `image_px`: the pixel of the camera's own recording (lens distortion and all), so the file holds
 * for every calibration of the rig; `panorama_px`: a pixel of this venue's panorama. `pitch_m`: the
 * venue contract's pitch frame — origin at the centre spot, x along the length towards the right-hand
 * goal, y across the pitch away from the cameras (the near touchline is y = −W/2). `pitch`: the
 * pitch's size when the venue file's is not the real one.
 */
export const pitchPointsSchema = z.object({
  pitch: z.object({ length_m: z.number().positive(), width_m: z.number().positive() }).optional(),
  points: z
    .array(
      z.union([
        z.object({ camera: z.string(), image_px: point, pitch_m: point, name: z.string().optional() }),
        z.object({ panorama_px: point, pitch_m: point, name: z.string().optional() }),
      ]),
    )
    .min(4, 'at least 4 pitch points'),
});
export type PitchPoints = z.infer<typeof pitchPointsSchema>;

/**
 * Reads and validates a `pitch-points.json`.
 *
 * @throws ValidationError `pitch_points_invalid` naming the file and the first problem.
 */
export async function readPitchPoints(path: string): Promise<PitchPoints> {
  let value: unknown;
  try {
    value = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new ValidationError('pitch_points_invalid', `${path}: not a JSON file (${(error as Error).message})`);
  }
  const parsed = pitchPointsSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ValidationError(
      'pitch_points_invalid',
      `${path}: ${issue?.path.join('.') || '(root)'}: ${issue?.message}`,
    );
  }
  return parsed.data;
}

/** How well the pitch points agree with the fitted homographies. */
export interface PitchRegistration {
  points: number;
  /** Homographies fitted: 1, or 2 for a two-camera rig with a seam (one per camera's part of the panorama). */
  parts: number;
  /** RMS over the points of the distance between a point's `pitch_m` and where its pixel maps, metres. */
  rmsErrorM: number;
  /** The worst point's distance, metres, and its name (or `point <i>`). */
  maxErrorM: number;
  worstPoint: string;
}

/** Options of {@link registerPitch}. */
export interface RegisterPitchOptions {
  /** Largest error any one point may have before the points are refused as inconsistent. @defaultValue 1.5 m */
  maxPointErrorM?: number;
}

/** A point on its way to the fit. */
interface Located {
  name: string;
  panorama: Point2;
  /** The same point on the panorama's plane, where the homographies act (the panorama itself unless cylindrical). */
  plane: Point2;
  pitch: Point2;
  /** The part of the panorama (camera) it belongs to. */
  part: number;
}

/**
 * Returns a copy of `venue` whose pitch frame is measured from `points`, with the pitch size from
 * the file and `quality.pitch_registered` true with the fit's errors.
 *
 * Homographies act on the panorama's plane (the panorama itself unless it is cylindrical:
 * shared `panoramaProjectionOf`); the points are taken there first.
 * - **One homography** pitch → panorama (`panorama.pitch_to_panorama` and its inverse) by the
 *   normalised DLT over every point: least squares, each clicked point counts, none is silently
 *   dropped.
 * - **One per camera** (`panorama.pitch_parts`) when the venue is a two-camera rig with a seam
 *   (`seam_x_px`: a self-calibrated rig). Its cameras are joined by a homography of the whole
 *   scene, not of the pitch plane, so the pitch maps into each camera's part of the panorama by its
 *   own homography (on the tsukuba pair one homography for both parts misses by metres, one per
 *   part by decimetres). Part 0 is the panorama left of the seam (the camera whose image centre
 *   lands further left), part 1 right of it; a camera point belongs to its camera's part, a
 *   panorama point to the side of the seam it is on; each part needs 4 points, not all on one line.
 *
 * Each camera's `pitch_to_image` is `image_to_panorama⁻¹ · pitch_to_panorama` of its part
 * (undistorted pixels). A camera point goes to the panorama as the stitcher takes it there: lens
 * undistortion (the division model when present, else Brown–Conrady), `image_to_panorama`, then
 * the inverse of the camera's `panorama_warp` (fixed point; the warp is a few pixels).
 * `panorama_to_pitch` is scaled so that the points map with a positive third coordinate (its
 * bottom-right entry ±1), so that "points above the horizon map behind the camera" stays true.
 *
 * @throws ValidationError `pitch_points_unknown_camera` (a camera the venue does not have),
 *   `pitch_points_outside` (a pixel outside its camera's frame or the panorama, or where the lens
 *   model folds), `calibration_degenerate` / `calibration_too_few_points` (from the DLT: fewer than
 *   4 points in a part, or collinear ones), `pitch_points_inconsistent` (a residual over
 *   `maxPointErrorM`; names the point the others disagree with, with its distance from where they put it).
 */
export function registerPitch(
  venue: VenueCalibration,
  points: PitchPoints,
  options: RegisterPitchOptions = {},
): { venue: VenueCalibration; registration: PitchRegistration } {
  const seam = venue.cameras.length === 2 ? venue.panorama.seam_x_px : undefined;
  const projection = panoramaProjectionOf(venue.panorama);
  // Part 0 is the panorama left of the seam: the camera whose image centre lands further left.
  const centreX = venue.cameras.map(
    (c) => applyHomography(mat3FromRows(c.image_to_panorama), c.width_px / 2, c.height_px / 2)[0],
  );
  const sideOf = (camera: number) => (seam && centreX[camera]! > centreX[1 - camera]! ? 1 : 0);
  const located: Located[] = points.points.map((p, i) => {
    const name = p.name ?? `point ${i}`;
    const at = 'camera' in p ? cameraToPanorama(venue, p.camera, p.image_px, name) : p.panorama_px;
    const [x, y] = at;
    if (!(x >= 0 && y >= 0 && x <= venue.panorama.width_px && y <= venue.panorama.height_px)) {
      throw new ValidationError(
        'pitch_points_outside',
        `${name}: panorama pixel (${x.toFixed(1)}, ${y.toFixed(1)}) is outside the ${venue.panorama.width_px}×${venue.panorama.height_px} panorama`,
      );
    }
    const part = !seam
      ? 0
      : 'camera' in p
        ? sideOf(venue.cameras.findIndex((c) => c.id === p.camera))
        : seamPart(seam, x, y);
    return { name, panorama: at, plane: projection.toPlane(x, y), pitch: p.pitch_m, part };
  });
  const fits = (seam ? [0, 1] : [0]).map((part) => {
    const mine = located.filter((l) => l.part === part);
    if (seam && mine.length < 4) {
      const camera = venue.cameras.find((_, i) => sideOf(i) === part);
      throw new ValidationError(
        'calibration_too_few_points',
        `camera "${camera?.id}" has ${mine.length} pitch points: each camera of a two-camera rig needs at least 4 (its part of the panorama maps the pitch by its own homography)`,
      );
    }
    return fitPart(mine);
  });
  const errors = located.map((l) => {
    const [mx, my] = applyHomography(fits[l.part]!.panoramaToPitch, ...l.plane);
    return Math.hypot(mx - l.pitch[0], my - l.pitch[1]);
  });
  const worst = errors.indexOf(Math.max(...errors));
  const registration: PitchRegistration = {
    points: errors.length,
    parts: fits.length,
    rmsErrorM: Math.sqrt(errors.reduce((s, e) => s + e * e, 0) / errors.length),
    maxErrorM: errors[worst] as number,
    worstPoint: located[worst]!.name,
  };
  const limit = options.maxPointErrorM ?? 1.5;
  if (registration.maxErrorM > limit) {
    const { index, errorM, restRmsM } = pointOthersDisagreeWith(located) ?? {
      index: worst,
      errorM: registration.maxErrorM,
      restRmsM: registration.rmsErrorM,
    };
    throw new ValidationError(
      'pitch_points_inconsistent',
      `${located[index]!.name} (pitch ${located[index]!.pitch.join(', ')} m) is ${errorM.toFixed(2)} m from where the other points put it (limit ${limit} m; the others agree within ${restRmsM.toFixed(2)} m RMS, all together ${registration.rmsErrorM.toFixed(2)} m): check its pixel and its pitch position, or the pitch size`,
    );
  }
  const rowsOf = (f: (typeof fits)[number]) => ({
    pitch_to_panorama: mat3Rows(f.pitchToPanorama),
    panorama_to_pitch: mat3Rows(f.panoramaToPitch),
  });
  const cameras = venue.cameras.map((c, i) => ({
    ...c,
    pitch_to_image: mat3Rows(
      normalizeHomography(
        mat3Multiply(mat3Invert(mat3FromRows(c.image_to_panorama)), (fits[sideOf(i)] ?? fits[0]!).pitchToPanorama),
      ),
    ),
  }));
  return {
    venue: {
      ...venue,
      ...(points.pitch ? { pitch: points.pitch } : {}),
      cameras,
      panorama: { ...venue.panorama, ...rowsOf(fits[0]!), ...(seam ? { pitch_parts: fits.map(rowsOf) } : {}) },
      quality: {
        ...(venue.quality ?? { method: 'points' }),
        pitch_registered: true,
        pitch_points: registration.points,
        pitch_rms_error_m: registration.rmsErrorM,
        pitch_max_error_m: registration.maxErrorM,
      },
    },
    registration,
  };
}

/**
 * The point the others disagree with: the one whose part, fitted without it, fits the rest best (least RMS),
 * with its distance from where that fit puts it. A least-squares fit over all points spreads one wrong point's
 * error over its neighbours, so the largest residual need not be the wrong point. Null when no part has 5 points.
 */
function pointOthersDisagreeWith(
  located: readonly Located[],
): { index: number; errorM: number; restRmsM: number } | null {
  const distance = (fit: ReturnType<typeof fitPart>, l: Located) => {
    const [x, y] = applyHomography(fit.panoramaToPitch, ...l.plane);
    return Math.hypot(x - l.pitch[0], y - l.pitch[1]);
  };
  let found: { index: number; errorM: number; restRmsM: number } | null = null;
  located.forEach((l, i) => {
    const others = located.filter((o, j) => j !== i && o.part === l.part);
    if (others.length < 4) return;
    let fit: ReturnType<typeof fitPart>;
    try {
      fit = fitPart(others);
    } catch {
      return; // the others alone are degenerate (on one line)
    }
    const restRmsM = Math.sqrt(others.reduce((sum, o) => sum + distance(fit, o) ** 2, 0) / others.length);
    if (!found || restRmsM < found.restRmsM) found = { index: i, errorM: distance(fit, l), restRmsM };
  });
  return found;
}

/**
 * The DLT fit of one part, panorama (plane) → pitch, so that its least squares are over metres, the unit the
 * errors are reported in (fitted the other way, the far side's points, a few pixels apart, weigh little and
 * miss by metres); signed so the points map in front, and its inverse normalised.
 */
function fitPart(mine: readonly Located[]): { pitchToPanorama: number[]; panoramaToPitch: number[] } {
  const fitted = homographyDlt(
    mine.map((l) => l.plane),
    mine.map((l) => l.pitch),
  );
  const w = mat3MulVec(fitted, [...(mine[0]!.plane as Point2), 1])[2];
  const panoramaToPitch = fitted.map((v) => (v * Math.sign(w)) / Math.abs(fitted[8] as number));
  return { pitchToPanorama: normalizeHomography(mat3Invert(panoramaToPitch)), panoramaToPitch };
}

/** A camera pixel as recorded → the panorama pixel the stitcher puts it at (see {@link registerPitch}). */
export function cameraToPanorama(venue: VenueCalibration, cameraId: string, imagePx: Point2, name: string): Point2 {
  const camera = venue.cameras.find((c) => c.id === cameraId);
  if (!camera) {
    throw new ValidationError(
      'pitch_points_unknown_camera',
      `${name}: camera "${cameraId}" is not one of the venue's (${venue.cameras.map((c) => c.id).join(', ')})`,
    );
  }
  const [u, v] = imagePx;
  if (!(u >= 0 && v >= 0 && u <= camera.width_px && v <= camera.height_px)) {
    throw new ValidationError(
      'pitch_points_outside',
      `${name}: pixel (${u}, ${v}) is outside camera "${cameraId}"'s ${camera.width_px}×${camera.height_px} frame`,
    );
  }
  const target = panoramaProjectionOf(venue.panorama).fromPlane(
    ...applyHomography(mat3FromRows(camera.image_to_panorama), ...undistort(camera, u, v)),
  );
  if (!(Number.isFinite(target[0]) && Number.isFinite(target[1]))) {
    throw new ValidationError(
      'pitch_points_outside',
      `${name}: pixel (${u}, ${v}) is where camera "${cameraId}"'s lens model folds`,
    );
  }
  const warp = camera.panorama_warp;
  if (!warp) return target;
  // The stitcher samples this camera at image_to_panorama⁻¹(P + warp(P)): solve P + warp(P) = target.
  let p: Point2 = target;
  for (let i = 0; i < 10; i++) {
    const [dx, dy] = warpAt(warp, p[0], p[1]);
    p = [target[0] - dx, target[1] - dy];
  }
  return p;
}

function undistort(camera: VenueCamera, u: number, v: number): Point2 {
  const d = camera.division_model;
  if (d)
    return undistortDivision({ lambda: d.lambda, cx: d.center_px[0], cy: d.center_px[1], normPx: d.norm_px }, u, v);
  return undistortBrown(camera.intrinsics, camera.distortion, u, v);
}
