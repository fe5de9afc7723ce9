import { readFile } from 'node:fs/promises';
import { PolyvisionError } from '@polyvision/shared';
import { z } from 'zod';
import { DETECTION_CLASSES } from '../detect/detect-options.ts';
import { DetectionsHeaderSchema, RgbSchema } from '../detect/detections-format.ts';

/**
 * The tracks file: one JSON document (UTF-8).
 * ```json
 * {"format":"polyvision.tracks","version":1,
 *  "detections":{…the detections header…},
 *  "tracker":{"name":"bytetrack","options":{…}},
 *  "frameCount":341,
 *  "tracks":[{"id":1,"class":"player","frames":[
 *     {"frame":0,"tMs":0,"box":[x1,y1,x2,y2],"score":0.91},
 *     {"frame":7,"tMs":280,"box":[…],"score":0,"interpolated":true}]}]}
 * ```
 * `frame`/`tMs` as in the detections file (analysed frames); boxes in source
 * (panorama) pixels; each track's frames ascend; `interpolated` frames fill
 * short gaps linearly (ByteTrack's post-processing) and carry score 0.
 */
export const TRACKS_FORMAT = 'polyvision.tracks';

export const TrackFrameSchema = z.object({
  frame: z.number().int().nonnegative(),
  tMs: z.number().nonnegative(),
  box: z.tuple([z.number(), z.number(), z.number(), z.number()]),
  score: z.number().min(0).max(1),
  interpolated: z.boolean().optional(),
  /**
   * The torso's mean colour (RGB 0–255) that the detect stage measured for the box this frame took
   * (`Detection.torso`); absent on interpolated frames and when not measured.
   */
  torso: RgbSchema.optional(),
});
export type TrackFrame = z.output<typeof TrackFrameSchema>;

export const TrackSchema = z.object({
  id: z.number().int().positive(),
  class: z.enum(DETECTION_CLASSES),
  frames: z.array(TrackFrameSchema).min(1),
});
export type Track = z.output<typeof TrackSchema>;

/**
 * Where a segment's file sits in its match (issue #18): segment `index`; its frame 0 is match frame
 * `firstMatchFrame` (analysed frames), at match time `startS` seconds.
 */
export const MatchSegmentSchema = z.object({
  index: z.number().int().nonnegative(),
  startS: z.number().nonnegative(),
  firstMatchFrame: z.number().int().nonnegative(),
});

export const TracksFileSchema = z.object({
  format: z.literal(TRACKS_FORMAT),
  version: z.literal(1),
  detections: DetectionsHeaderSchema,
  tracker: z.object({ name: z.string(), options: z.record(z.string(), z.unknown()) }),
  frameCount: z.number().int().nonnegative(),
  tracks: z.array(TrackSchema),
  /**
   * Present when the file is one segment of a match (issue #18): `frame`/`tMs` are the segment's
   * own (its video's); its frame 0 is match frame `firstMatchFrame`, at match time `startS`.
   * Ids are the match's (the same person keeps an id across segments).
   */
  segment: MatchSegmentSchema.optional(),
});
export type TracksFile = z.output<typeof TracksFileSchema>;

/**
 * Reads and validates a tracks file.
 *
 * @throws PolyvisionError `tracks_invalid` (not retriable).
 */
export async function readTracksFile(path: string): Promise<TracksFile> {
  let value: unknown;
  try {
    value = JSON.parse(await readFile(path, 'utf8'));
  } catch (cause) {
    throw new PolyvisionError('tracks_invalid', `${path}: not a JSON tracks file`, { cause });
  }
  const parsed = TracksFileSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new PolyvisionError('tracks_invalid', `${path}: ${issue?.path.join('.')} ${issue?.message}`);
  }
  return parsed.data;
}
