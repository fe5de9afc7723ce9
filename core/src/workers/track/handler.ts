import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  envEnum,
  envInt,
  loadConfig,
  PolyvisionError,
  type VenueCalibration,
  venueCalibrationSchema,
} from '@polyvision/shared';
import { z } from 'zod';
import { readDetectionsFile } from '../detect/detections-format.ts';
import {
  type ArtifactIo,
  findInput,
  LocalArtifactIo,
  outputKey,
  stageIoConfig,
  throttle,
  withWorkDir,
} from '../detect/stage-io.ts';
import type { StageHandler } from '../runtime/stage-handler.ts';
import type { StageHandlerContext } from '../runtime/stage-registry.ts';
import { readCarry, writeCarry } from '../segment/carry.ts';
import { segmentStartS } from '../segment/segment-clock.ts';
import { appearanceFeatures, storedAppearanceFeatures } from './appearance-features.ts';
import { writeBallTrackFile } from './ball/ball-track-format.ts';
import { modelCardThresholds } from './model-card.ts';
import { pitchRegionOf } from './pitch-region.ts';
import { trackClip, writeTracksFile } from './run-track.ts';
import { analysedAtOtherRate, trackCarryAcrossGap, trackCarryAtRate, trackCarrySchema } from './tracker-carry.ts';

/** The repository's default detector (its model card, `metrics.json`, sits beside it). */
const DEFAULT_MODEL_PATH = fileURLToPath(
  new URL('../../../models/player-detector/player-detector.onnx', import.meta.url),
);

const optionalScore = z
  .string()
  .regex(/^(0(\.\d+)?|1(\.0+)?)$/, { message: 'a score in [0, 1]' })
  .transform(Number)
  .optional();

/** Environment of the track stage. */
export const trackEnvSchema = z.object({
  /** Frames (at 30 fps; scaled to the analysis rate) a lost track waits to be found again. */
  TRACK_LOST_BUFFER_FRAMES: envInt(30, 1, 10_000),
  /** Gaps filled by interpolation, in analysed frames. */
  TRACK_INTERPOLATE_GAP_FRAMES: envInt(20, 0, 1_000),
  /** ByteTrack's high score threshold; unset: the model card's, else calibrated on the clip. */
  TRACK_HIGH_SCORE: optionalScore,
  /** ByteTrack's low score threshold (with `TRACK_HIGH_SCORE`). @defaultValue 0.1 */
  TRACK_LOW_SCORE: optionalScore,
  /**
   * `on` (default): appearance (each person's torso colour histogram, as the detect stage stored it
   * with the box; for a detections file without it, decoded from the panorama/camera video) gates
   * association and lets a lost player be found again after an occlusion (bench/README § track);
   * `off`: motion only.
   */
  TRACK_APPEARANCE: envEnum(['on', 'off'] as const, 'on'),
  /**
   * `on` (default): the tracks' predictions move with the camera's motion the detect stage measured
   * (`TrackOptions.cameraMotion`; nothing moves for a fixed rig); `off`: ignore it.
   */
  TRACK_CAMERA_MOTION: envEnum(['on', 'off'] as const, 'on'),
  /** The detector whose model card (`metrics.json` beside it) may give the thresholds. */
  DETECT_MODEL_PATH: z.string().optional(),
});

/**
 * Builds the track stage: reads `detections` (kind) and, when the job has one, the venue
 * calibration (kind `calibration`, or an input whose key ends in `venue.json`: its pitch keeps
 * tracks and the ball on the pitch); runs ByteTrack on the people (thresholds: `TRACK_HIGH_SCORE`,
 * else the model card of `DETECT_MODEL_PATH` when the detections come from that model, else
 * calibrated on the clip; appearance from the detections, else the `panorama`/`camera` video, unless
 * `TRACK_APPEARANCE=off`)
 * and the ball tracker; writes `tracks.json` (kind `tracks`) and
 * `ball-track.json` (kind `ball-track`). Fails with `no_tracks` (not retriable) when no track lasts
 * long enough, `calibration_invalid` for a venue.json that does not validate.
 *
 * A segment of a match job (`task.segment`, issue #18) continues from the `track-carry` of the
 * previous segment (ByteTracker state, thresholds, the ball tracker's last 2 s: ids hold across the
 * boundary; the tracks end there, ids going on, after a gap or when that segment was analysed at
 * another rate — stat `carriedAnalysisFps`, a warning in the log), writes its files
 * under `…/segment-00000k/` with `segment` in tracks.json, adds its own `track-carry` to the
 * outputs, and never fails with `no_tracks`; `carry_missing` / `carry_invalid` (not retriable).
 */
export function createStageHandler(context: StageHandlerContext, overrides: { io?: ArtifactIo } = {}): StageHandler {
  const env = loadConfig(trackEnvSchema, context.env);
  const ioConfig = stageIoConfig(context.env);
  const io = overrides.io ?? new LocalArtifactIo(ioConfig.artifactDir, ioConfig.storageId);
  return {
    stage: 'track',
    async run({ task, signal, reportProgress }) {
      const input = findInput(task, ['detections']);
      const venueRef = task.inputs.find((i) => i.kind === 'calibration' || i.object_key.endsWith('venue.json'));
      const videoRef = task.inputs.find((i) => i.kind === 'panorama') ?? task.inputs.find((i) => i.kind === 'camera');
      return withWorkDir(async (dir) => {
        const detections = await readDetectionsFile(await io.openInput(input, dir, signal));
        const carried = await readCarry(task, trackCarrySchema, io, dir, signal);
        const fps = detections.header.analysisFps;
        const carry = carried && trackCarryAtRate(trackCarryAcrossGap(carried, task.segment?.gap_s ?? 0, fps), fps);
        const carriedOtherRate = carried !== null && analysedAtOtherRate(carried, fps);
        if (carriedOtherRate) {
          context.logger?.warn(
            { match: task.match_id, segment: task.segment?.index, carriedFps: carried?.analysisFps, fps },
            'track: the previous segment was analysed at another rate; its tracks end here (ids go on)',
          );
        }
        let venue: VenueCalibration | undefined;
        if (venueRef) {
          const text = await readFile(await io.openInput(venueRef, dir, signal), 'utf8');
          const parsed = venueCalibrationSchema.safeParse(safeJson(text));
          if (!parsed.success) {
            throw new PolyvisionError(
              'calibration_invalid',
              `${venueRef.object_key}: ${parsed.error.issues[0]?.path.join('.')} ${parsed.error.issues[0]?.message}`,
            );
          }
          venue = parsed.data;
        }
        const { width, height } = detections.header.source;
        const pitchRegion = venue ? pitchRegionOf(venue, width, height) : null;
        const card =
          env.TRACK_HIGH_SCORE === undefined
            ? await modelCardThresholds(env.DETECT_MODEL_PATH ?? DEFAULT_MODEL_PATH, detections.header.model)
            : null;
        // Appearance as the detect stage measured it; from older detections files, decoded from the video.
        const appearance =
          env.TRACK_APPEARANCE === 'off'
            ? undefined
            : (storedAppearanceFeatures(detections) ??
              (videoRef
                ? await appearanceFeatures(await io.openInput(videoRef, dir, signal), detections, {
                    signal,
                    onProgress: throttle((f) => reportProgress(f * 0.5)),
                  })
                : undefined));
        const clip = trackClip(
          detections,
          {
            lostTrackBufferAt30Fps: env.TRACK_LOST_BUFFER_FRAMES,
            interpolateGapFrames: env.TRACK_INTERPOLATE_GAP_FRAMES,
            ...(env.TRACK_HIGH_SCORE !== undefined
              ? { highScoreThreshold: env.TRACK_HIGH_SCORE, lowScoreThreshold: env.TRACK_LOW_SCORE ?? 0.1 }
              : {}),
            ...(card ? { modelCardThresholds: { high: card.high, low: card.low } } : {}),
            ...(card?.ball !== undefined ? { ball: { minScore: card.ball } } : {}),
            ...(pitchRegion ? { pitchRegion } : {}),
            ...(appearance ? { appearance } : {}),
            cameraMotion: env.TRACK_CAMERA_MOTION === 'on',
            ...(task.segment ? { segment: { carry } } : {}),
          },
          signal,
          throttle((f) => reportProgress(0.5 + f * 0.4)),
        );
        if (task.segment) {
          clip.tracks.segment = {
            index: task.segment.index,
            startS: segmentStartS(task.segment, detections.header.source.durationMs / 1000),
            firstMatchFrame: carry?.matchFrames ?? 0,
          };
          clip.ballTrack.segment = clip.tracks.segment;
        }
        const path = join(dir, 'tracks.json');
        // A segment without people (a break, the camera covered) is no reason to fail the match.
        await writeTracksFile(path, clip.tracks, !task.segment);
        const ballPath = join(dir, 'ball-track.json');
        await writeBallTrackFile(ballPath, clip.ballTrack);
        const outputs = [
          await io.writeOutput(
            {
              task,
              kind: 'tracks',
              objectKey: outputKey(task, 'tracks.json'),
              localPath: path,
              contentType: 'application/json',
            },
            signal,
          ),
          await io.writeOutput(
            {
              task,
              kind: 'ball-track',
              objectKey: outputKey(task, 'ball-track.json'),
              localPath: ballPath,
              contentType: 'application/json',
            },
            signal,
          ),
        ];
        const carryRef = await writeCarry(task, clip.carry, io, dir, signal);
        if (carryRef) outputs.push(carryRef);
        reportProgress(1);
        return {
          outputs,
          stats: {
            tracks: clip.tracks.tracks.length,
            people: clip.tracks.tracks.filter((t) => t.class !== 'ball').length,
            frames: clip.tracks.frameCount,
            thresholdHigh: clip.thresholds.high,
            thresholdLow: clip.thresholds.low,
            offPitchTracksDropped: clip.offPitchTracksDropped,
            pitchRegion: pitchRegion ? 1 : 0,
            ballCoverage: clip.ballTrack.summary.coverage,
            ...(task.segment ? { segment: task.segment.index, nextTrackId: clip.carry.tracker.nextId } : {}),
            ...(carriedOtherRate ? { carriedAnalysisFps: carried?.analysisFps ?? 0 } : {}),
          },
        };
      }, ioConfig.workDir);
    },
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
