import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { PolyvisionError } from '@polyvision/shared';
import { z } from 'zod';
import { DETECTION_CLASSES } from './detect-options.ts';
import type { BoxXyxy } from './geometry.ts';

/**
 * The detections file: JSON Lines (`application/x-ndjson`), UTF-8.
 *
 * Line 1, the header:
 * ```json
 * {"format":"polyvision.detections","version":1,
 *  "source":{"width":1280,"height":720,"fps":25,"frameCount":341,"durationMs":13640},
 *  "analysisFps":25,
 *  "model":{"version":"yolox-nano-coco","sha256":"…","layout":"yolox","inputWidth":416,"inputHeight":416,
 *           "executionProvider":"cpu","precision":"fp32","tiles":1},
 *  "tiling":{"mode":"auto","columns":1,"rows":1,"scale":0.667,"source":"estimated","personHeightPx":54,"modelPersonHeightPx":28},
 *  "classes":["player","ball"],
 *  "warnings":["…"]}
 * ```
 * `tiling`, `warnings`, `appearance` and `model.precision` are optional (absent in older files; `warnings` only when there
 * are some; `appearance: "torso-rgb-64"` when the producer measured the person boxes' colours).
 * Then one line per analysed frame, in order, also frames without detections:
 * ```json
 * {"frame":0,"sourceFrame":0,"tMs":0,"detections":[{"class":"player","score":0.91,"box":[x1,y1,x2,y2]}]}
 * ```
 * `frame` counts analysed frames from 0 (at `analysisFps`); `sourceFrame` is
 * the 0-based index of the source frame analysed (absent in older files);
 * `tMs` is that source frame's presentation time from the clip's first frame
 * in ms (its pts, not `frame / analysisFps`); `cameraMotion` (optional) is the camera's motion
 * from the previous analysed frame, `[a, b, tx, c, d, ty]` (`camera-motion.ts`: absent when the
 * camera stood still, on the first frame, or when it was not measured — the header's
 * `cameraMotion` says whether it was); `box` is in source (panorama)
 * pixels, x right and y down, rounded to 0.1 px; `score` in [0, 1]; a person's
 * `appearance` (optional) is its torso colour histogram in that very frame (appearance.ts),
 * which the track stage uses instead of decoding the video a second time, and `torso` (optional)
 * its torso's mean colour, which the track stage keeps with the box and the analyze stage splits
 * teams by, instead of decoding the video again.
 */
export const DETECTIONS_FORMAT = 'polyvision.detections';

/** `DetectionsHeader.appearance` of a file whose person boxes carry `torsoHistogram`s. */
export const TORSO_APPEARANCE = 'torso-rgb-64';

/**
 * `DetectionsHeader.cameraMotion.method` of a file whose frames carry the camera's motion: sparse
 * Lucas–Kanade flow of Shi–Tomasi corners, affine RANSAC fit (`camera-motion.ts`).
 */
export const CAMERA_MOTION_METHOD = 'lk-affine-ransac';

/** `DetectionsHeader.torsoColour` of a file whose person boxes carry `measureTorso`'s mean colour. */
export const TORSO_MEAN_RGB = 'torso-mean-rgb';

/** An RGB colour, each channel an integer 0–255 (a torso's mean colour). */
export const RgbSchema = z.tuple([z.number().int(), z.number().int(), z.number().int()]);

export const DetectionSchema = z.object({
  class: z.enum(DETECTION_CLASSES),
  score: z.number().min(0).max(1),
  box: z.tuple([z.number(), z.number(), z.number(), z.number()]),
  /**
   * A person's torso colours in the frame the detector saw (`torsoHistogram`, stored by
   * `encodeHistogram`); absent for the ball, boxes too small to measure, and files written before it.
   */
  appearance: z.string().optional(),
  /**
   * A person's torso mean colour, RGB 0–255, in the frame the detector saw (`measureTorso`), when it
   * saw the frame at the source size; absent for the ball, boxes with fewer than 4 torso pixels, frames
   * decoded smaller and files written before 2026-11-29.
   */
  torso: RgbSchema.optional(),
});
export type Detection = z.output<typeof DetectionSchema>;

export const DetectionsHeaderSchema = z.object({
  format: z.literal(DETECTIONS_FORMAT),
  version: z.literal(1),
  source: z.object({
    width: z.number().int().positive(),
    height: z.number().int().positive(),
    fps: z.number().positive(),
    frameCount: z.number().int().nonnegative(),
    durationMs: z.number().nonnegative(),
  }),
  analysisFps: z.number().positive(),
  model: z.object({
    version: z.string(),
    sha256: z.string(),
    layout: z.string(),
    inputWidth: z.number().int(),
    inputHeight: z.number().int(),
    executionProvider: z.string(),
    /** fp32 or int8 (`sha256` is that file's); absent in older files: fp32. */
    precision: z.enum(['fp32', 'int8']).optional(),
    tiles: z.number().int().positive(),
    /** `flip` when every tile was inferred mirrored too and the passes fused (flip-fusion.ts); absent: one pass. */
    testTimeAugmentation: z.literal('flip').optional(),
    /**
     * The person verifier that rescored the person boxes (verify/verifier.ts): its file's sha256 and
     * the fusion weight; absent: the detector's own scores (`DETECT_VERIFIER=off`, a model without one, or
     * an older file).
     */
    verifier: z.object({ sha256: z.string(), weight: z.number() }).optional(),
    /** The ball verifier that rescored the ball boxes, likewise (player-detector 3.4 on). */
    ballVerifier: z.object({ sha256: z.string(), weight: z.number() }).optional(),
  }),
  classes: z.array(z.enum(DETECTION_CLASSES)),
  /** The tile grid used (absent in older files); `source`: hint, estimated, unknown (whole frame), grid, off. */
  tiling: z
    .object({
      mode: z.string(),
      columns: z.number().int().positive(),
      rows: z.number().int().positive(),
      scale: z.number(),
      source: z.string(),
      personHeightPx: z.number().optional(),
      modelPersonHeightPx: z.number().optional(),
    })
    .optional(),
  /** Things a person should know about this run (e.g. a model that looks wrong for the footage). */
  warnings: z.array(z.string()).optional(),
  /**
   * What each person box's `appearance` holds, when the producer measured it (`torso-rgb-64`:
   * `torsoHistogram`); a box without one was too small to measure. Absent: not measured.
   */
  appearance: z.literal(TORSO_APPEARANCE).optional(),
  /**
   * `torso-mean-rgb` when the producer measured each person box's `torso` colour (at the source size).
   * Absent: not measured.
   */
  torsoColour: z.literal(TORSO_MEAN_RGB).optional(),
  /**
   * When the producer measured the camera's motion between analysed frames (frames' `cameraMotion`):
   * how, and what it found (`CameraMotionCounts`). Absent: not measured (older files, `DETECT_CAMERA_MOTION=off`).
   */
  cameraMotion: z
    .object({
      method: z.literal(CAMERA_MOTION_METHOD),
      workingWidthPx: z.number().int().positive(),
      moving: z.number().int().nonnegative(),
      still: z.number().int().nonnegative(),
      unknown: z.number().int().nonnegative(),
      skipped: z.number().int().nonnegative(),
    })
    .optional(),
});
export type DetectionsHeader = z.output<typeof DetectionsHeaderSchema>;

export const FrameDetectionsSchema = z.object({
  frame: z.number().int().nonnegative(),
  sourceFrame: z.number().int().nonnegative().optional(),
  tMs: z.number().nonnegative(),
  /** The camera's motion from the previous analysed frame (`CameraMotion`, source px); absent: none known. */
  cameraMotion: z.tuple([z.number(), z.number(), z.number(), z.number(), z.number(), z.number()]).optional(),
  detections: z.array(DetectionSchema),
});
export type FrameDetections = z.output<typeof FrameDetectionsSchema>;

/** A whole detections file in memory. */
export interface DetectionsFile {
  header: DetectionsHeader;
  frames: FrameDetections[];
}

const round1 = (v: number) => Math.round(v * 10) / 10;

/** A box as the detections file writes it: each coordinate rounded to 0.1 px. */
export function roundBoxPx(box: BoxXyxy): BoxXyxy {
  return [round1(box[0]), round1(box[1]), round1(box[2]), round1(box[3])];
}

/**
 * One frame's line (with the trailing newline); boxes rounded to 0.1 px, scores to 1e-4, a camera
 * motion's linear part to 1e-6 and its translation to 0.01 px.
 */
export function formatFrameLine(frame: FrameDetections): string {
  return `${JSON.stringify({
    frame: frame.frame,
    ...(frame.sourceFrame !== undefined ? { sourceFrame: frame.sourceFrame } : {}),
    tMs: Math.round(frame.tMs * 1000) / 1000,
    ...(frame.cameraMotion
      ? {
          cameraMotion: frame.cameraMotion.map((v, i) =>
            i === 2 || i === 5 ? Math.round(v * 100) / 100 : Math.round(v * 1e6) / 1e6,
          ),
        }
      : {}),
    detections: frame.detections.map((d) => ({
      class: d.class,
      score: Math.round(d.score * 1e4) / 1e4,
      box: roundBoxPx(d.box),
      ...(d.appearance !== undefined ? { appearance: d.appearance } : {}),
      ...(d.torso !== undefined ? { torso: d.torso } : {}),
    })),
  })}\n`;
}

/**
 * Reads and validates a detections file.
 *
 * @throws PolyvisionError `detections_invalid` (not retriable) naming the line that is wrong.
 */
export async function readDetectionsFile(path: string): Promise<DetectionsFile> {
  const lines = createInterface({ input: createReadStream(path), crlfDelay: Number.POSITIVE_INFINITY });
  let header: DetectionsHeader | undefined;
  const frames: FrameDetections[] = [];
  let lineNumber = 0;
  for await (const line of lines) {
    lineNumber += 1;
    if (line.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (cause) {
      throw new PolyvisionError('detections_invalid', `${path}:${lineNumber}: not JSON`, { cause });
    }
    const parsed = (header ? FrameDetectionsSchema : DetectionsHeaderSchema).safeParse(value);
    if (!parsed.success) {
      throw new PolyvisionError(
        'detections_invalid',
        `${path}:${lineNumber}: ${parsed.error.issues[0]?.path.join('.')} ${parsed.error.issues[0]?.message}`,
      );
    }
    if (header) frames.push(parsed.data as FrameDetections);
    else header = parsed.data as DetectionsHeader;
  }
  if (!header) throw new PolyvisionError('detections_invalid', `${path}: empty, no header line`);
  return { header, frames };
}
